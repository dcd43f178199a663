"""A server's `tools/list_changed` notifications, debounced: the tool list is read again at most
once a second per server, however many arrive (one call of a hostile or buggy server can send
thousands), and the burst is logged once, not once per notification.

    changes = ListChanges("tracker", reread)   # reread: read the list again (never raises)
    changes.heard()                            # per notification: cheap, never waits
    await changes.close()                      # the session ended
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 1.0


class ListChanges:
    def __init__(self, server: str, reread: Callable[[], Awaitable[None]], *,
                 interval: float = INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.server = server
        self._reread = reread
        self.interval = interval
        self._clock = clock
        self.notices = 0  # notifications heard in this session
        self.rereads = 0  # times the list was read again because of them
        self._last = -interval  # when it was last read again (on `clock`)
        self._again = False  # heard while a re-read waited or ran: one more after it
        self._task: asyncio.Task[None] | None = None

    def heard(self) -> None:
        """One notification: a re-read is due (now, or a second after the last one)."""
        self.notices += 1
        if self.notices == 1:
            log.info("MCP server %s: its tool list changed; it is read again at most once "
                     "a second while changes keep coming", self.server)
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(self._run(), name=f"mcp-list:{self.server}")

    async def _run(self) -> None:
        while True:
            wait = self._last + self.interval - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
            self._again = False
            self._last = self._clock()
            self.rereads += 1
            await self._reread()
            log.debug("MCP server %s: tool list read again (%d changes heard, %d re-reads)",
                      self.server, self.notices, self.rereads)
            if not self._again:
                return

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self.notices > 1:
            log.info("MCP server %s: %d tool list changes heard, the list read again %d "
                     "times", self.server, self.notices, self.rereads)
