"""Work a component starts after a turn and does not wait for (memory extraction, compaction):
kept referenced while it runs (asyncio keeps only weak references to tasks), waited for by
`drain` (tests, a graceful stop) and cancelled by `close`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Until nothing runs (work may start more work)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and wait until it has ended: what stopping a loop, or a helper task in a
    `finally`, needs before it goes on (its cancellation is how it ends, not an error)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
