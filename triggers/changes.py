""""The tasks changed": said by whoever changes a task (the task service, for the LLM's tools,
/tasks and the CLI), heard by the trigger engine, which rebuilds its wake-up from the
database. The service needs no engine to exist, so tools can have it before the engine (which
needs the gateway, which needs the turn's parts) is built.

With several processes (Redis) a change is said as a signal (bot.work.control, `tasks`), so
the scheduler, wherever it runs, hears it at once; every process hears it, this one too, and
tells its own listeners then."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.work.control import Signals

log = logging.getLogger(__name__)

Listener = Callable[[], Awaitable[None]]


class TaskChanges:
    def __init__(self, signals: Signals | None = None) -> None:
        self._listeners: list[Listener] = []
        self.signals = signals if signals is not None and signals.shared else None
        if self.signals is not None:
            self.signals.listen("tasks", self._heard)

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def changed(self) -> None:
        """Tell every listener (in every process); one that fails is logged (the database
        holds the change, and the engine's heartbeat reads it again)."""
        if self.signals is not None:
            await self.signals.say("tasks")
            return
        await self._tell()

    async def _heard(self, fields: dict[str, str]) -> None:
        await self._tell()

    async def _tell(self) -> None:
        for listener in self._listeners:
            try:
                await listener()
            except Exception:
                log.warning("a listener to task changes failed", exc_info=True)
