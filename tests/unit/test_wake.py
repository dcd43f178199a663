"""A loop that sleeps until woken stops when it is cancelled, also when the cancellation comes
as the wake-up does (bot.plumbing.wake; asyncio.wait_for on Python 3.11 can lose it)."""

from __future__ import annotations

import asyncio

import pytest

from bot.plumbing.wake import woken


async def test_a_cancel_that_comes_with_the_wake_up_is_not_lost() -> None:
    event = asyncio.Event()
    task = asyncio.create_task(woken(event, 10))
    await asyncio.sleep(0)  # it waits
    event.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_loop_on_it_stops_when_cancelled_as_it_is_woken() -> None:
    event = asyncio.Event()
    rounds = 0

    async def loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            await woken(event, 10)
            event.clear()

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    event.set()
    task.cancel()
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 30)
    assert task.cancelled()


async def test_it_says_whether_it_was_woken() -> None:
    event = asyncio.Event()
    assert await woken(event, 0.01) is False
    event.set()
    assert await woken(event, 10) is True
