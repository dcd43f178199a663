"""Valet's channel-agnostic core."""
