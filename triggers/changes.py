""""The tasks changed": said by whoever changes a task (the task service, for the LLM's tools,
/tasks and the CLI), heard by the trigger engine, which rebuilds its wake-up from the
database. The service needs no engine to exist, so tools can have it before the engine (which
needs the gateway, which needs the turn's parts) is built."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Listener = Callable[[], Awaitable[None]]


class TaskChanges:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def changed(self) -> None:
        """Tell every listener; one that fails is logged (the database holds the change, and
        the engine's heartbeat reads it again)."""
        for listener in self._listeners:
            try:
                await listener()
            except Exception:
                log.warning("a listener to task changes failed", exc_info=True)
