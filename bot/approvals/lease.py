"""An approved action runs under a lease: a heartbeat renews it while the action runs, so a
process that dies mid-action leaves a lease that lapses (the sweeper then settles the request
as interrupted); and an action whose lease was taken from it stops instead of running on
unowned."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from bot.plumbing.background import cancel_and_wait

log = logging.getLogger(__name__)

T = TypeVar("T")


class LeaseLost(Exception):
    """The request was settled under the running action (its lease had lapsed): the action was
    cancelled and its outcome belongs to nobody."""


async def run_leased(action: Coroutine[Any, Any, T], *, renew: Callable[[], Awaitable[bool]],
                     every: float) -> T:
    """Run `action`, calling `renew` every `every` seconds (wall time: it proves this process
    is alive). `renew` answering False cancels the action and raises LeaseLost."""
    running = asyncio.ensure_future(action)
    lost = False

    async def heartbeat() -> None:
        nonlocal lost
        while True:
            await asyncio.sleep(every)
            try:
                still_ours = await renew()
            except Exception:  # a database hiccup: the lease has slack, try again next beat
                log.warning("renewing an action's lease failed; retrying", exc_info=True)
                continue
            if not still_ours:
                lost = True
                running.cancel()
                return

    beat = asyncio.create_task(heartbeat())
    try:
        return await running
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if lost and current is not None and not current.cancelling():
            raise LeaseLost("the action's lease was lost; it was stopped") from None
        raise
    finally:
        await cancel_and_wait(beat)
