"""Jobs the offload tests run in a worker process (tests/unit/test_offload_and_stall.py).

Apart from the test module on purpose: a worker imports the module of the function it runs,
and `bot.plumbing.offload` asks for one that imports cheaply. The test module imports pytest
and the bot; a fresh worker (nice 10) on a loaded machine with no compiled files yet took past
the tests' 30 s bound importing it (the newcomer's run at load 13-17)."""

from __future__ import annotations

import os
import time


def spin(seconds: float) -> int:
    """Busy CPU in the worker, holding its GIL the whole time."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def worker_pid() -> int:
    return os.getpid()


def fail() -> None:
    raise KeyError("no such thing")
