"""How big a benchmark runs: in full for `make bench`, small with `--quick` (the test suite
runs every benchmark that way: tests/e2e/test_bench_command.py), so a benchmark that breaks
is found by `make test`, not by the next person who runs `make bench`."""

from __future__ import annotations

import os

QUICK_ENV = "VALET_BENCH_QUICK"


def quick() -> bool:
    return os.environ.get(QUICK_ENV) == "1"


def sized(full: int, small: int) -> int:
    """`full` for `make bench`, `small` with --quick."""
    return small if quick() else full
