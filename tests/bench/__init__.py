"""Benchmarks: `make bench` prints numbers; nothing here is asserted in the test suite."""
