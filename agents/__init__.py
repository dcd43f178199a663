"""Valet agents and the built-in tools they use."""
