"""Work on untrusted input runs in a worker process with a hard deadline; an event loop held
too long is reported with what held it."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time

import pytest

from agents.tools.html_text import page_text
from bot.plumbing.offload import WorkerPool, WorkFailed, WorkTimeout
from bot.plumbing.stall import StallMonitor
from tests.helpers import until
from tests.unit.offload_jobs import fail, spin, worker_pid

# Bounds for work that is not about the deadline: a worker runs at nice 10, and on a machine
# at load 15 it gets so little CPU that starting one and running a trivial job took past 30 s.
# Generous, and returned from as soon as the work is done. (The deadline is tested with 0.5 s.)
BOUND = 300.0


@pytest.fixture
def pool():
    workers = WorkerPool(max_workers=2)
    yield workers
    workers.close()


async def test_work_past_its_deadline_is_killed_while_the_loop_runs_on(pool):
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    first = await pool.run(worker_pid, timeout=BOUND)
    with pytest.raises(WorkTimeout, match=r"spin did not finish within 0\.5 s"):
        await pool.run(spin, 60, timeout=0.5)
    ticker.cancel()
    assert ticks >= 10  # the loop went on while the worker was busy
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # the busy worker is gone, not left spinning
    assert await pool.run(worker_pid, timeout=BOUND) != first  # a fresh one took its place


async def test_cancelling_the_caller_kills_the_worker(pool):
    pid = await pool.run(worker_pid, timeout=BOUND)
    task = asyncio.create_task(pool.run(spin, 60, timeout=60))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_failure_in_the_worker_is_a_clear_error_and_the_worker_is_reused(pool):
    pid = await pool.run(worker_pid, timeout=BOUND)
    with pytest.raises(WorkFailed, match="KeyError: 'no such thing'"):
        await pool.run(fail, timeout=BOUND)
    assert await pool.run(worker_pid, timeout=BOUND) == pid
    assert pool.started == 1


async def test_concurrent_work_is_capped_at_the_pool_size(pool):
    pids = await asyncio.gather(*[pool.run(spin, 0.05, timeout=BOUND) for _ in range(6)])
    assert len(pids) == 6
    assert pool.started <= 2


@pytest.mark.parametrize("hostile", [
    b"<a" * 1_000_000, b"<div>" * 400_000, b"<b><i>" * 300_000, b"<table><td>" * 200_000,
    b"<!--" * 500_000, b"<p " + b"x='y' " * 300_000 + b">",
])
async def test_hostile_pages_are_parsed_in_a_worker_well_within_the_deadline(pool, hostile):
    page = await pool.run(page_text, hostile, None, timeout=BOUND)
    assert isinstance(page.text, str)


async def test_text_nested_past_the_parser_limit_is_reported_missing(pool):
    page = await pool.run(page_text, b"<div>" * 300 + b"deep" + b"</div>" * 300, None,
                          timeout=BOUND)
    assert page.too_deep and "deep" not in page.text
    shallow = await pool.run(page_text, b"<div>" * 50 + b"fine", None, timeout=BOUND)
    assert not shallow.too_deep and shallow.text == "fine"


async def test_a_stall_is_logged_with_the_coroutine_that_held_the_loop(caplog):
    monitor = StallMonitor(0.1)
    monitor.start()

    async def parse_synchronously():
        time.sleep(0.6)  # noqa: ASYNC251 - the point: CPU work done on the loop

    with caplog.at_level(logging.WARNING, logger="bot.plumbing.stall"):
        await asyncio.sleep(0.05)
        await asyncio.create_task(parse_synchronously(), name="alice-turn")
        # the heartbeat comes back and records the stall (at whatever pace this machine has)
        await until(lambda: monitor.stalls, "the stall recorded")
    await monitor.stop()
    assert len(monitor.stalls) == 1
    stall = monitor.stalls[0]
    assert stall.duration_ms >= 400
    assert "alice-turn" in stall.running and "parse_synchronously" in stall.running
    assert "time.sleep(0.6)" in stall.stack
    logged = caplog.text
    assert "event loop blocked for" in logged and "parse_synchronously" in logged
    assert "event loop stalled for" in logged
    # Readable in `valet logs`: each warning is one line, saying where, innermost first.
    # The stall this test made (on a busy machine the watchdog may also see a short one of
    # its own while the test waits; every line is checked for newlines below).
    [blocked] = [r.getMessage() for r in caplog.records if "blocked for" in r.getMessage()
                 and "alice-turn" in r.getMessage()]
    assert "\n" not in blocked
    assert re.search(r"; at test_offload_and_stall\.py:\d+ in parse_synchronously( < |$)",
                     blocked), blocked
    assert all("\n" not in r.getMessage() for r in caplog.records
               if r.levelno >= logging.WARNING)


async def test_a_loop_that_keeps_awaiting_records_no_stall():
    monitor = StallMonitor(1.0)
    monitor.start()
    for _ in range(20):
        await asyncio.sleep(0.01)
    await monitor.stop()
    assert list(monitor.stalls) == []
