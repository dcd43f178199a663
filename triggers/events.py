"""Events: publish/subscribe with pattern matching behind a small EventBus protocol.

The in-process bus is the embedded default: at-least-once (a handler that raises gets the event
again, up to `max_attempts`) and acknowledged only after every matching handler succeeded.
A Redis Streams bus (several processes, consumer groups, XACK after the effect) fits the same
protocol. Handlers must tolerate a second delivery: the engine's run key (the event id) makes
one a no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    source: str  # "email", "github", "home"
    type: str  # "received", "push", "door.opened"
    data: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    at: datetime | None = None


@dataclass(frozen=True)
class EventPattern:
    """source and type are shell-style patterns ("email", "door.*", "*"); each field is a
    dotted path into the data whose value must equal (or, for strings, glob-match) it."""

    source: str = "*"
    type: str = "*"
    fields: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, event: Event) -> bool:
        if not (fnmatch.fnmatchcase(event.source, self.source)
                and fnmatch.fnmatchcase(event.type, self.type)):
            return False
        return all(_field_matches(_lookup(event.data, path), want)
                   for path, want in self.fields.items())


_MISSING = object()


def _lookup(data: Mapping[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _field_matches(value: Any, want: Any) -> bool:
    if value is _MISSING:
        return False
    if isinstance(want, str) and isinstance(value, str):
        return fnmatch.fnmatchcase(value.lower(), want.lower())
    return bool(value == want)


Handler = Callable[[Event], Awaitable[None]]


class EventBus(Protocol):
    async def publish(self, event: Event) -> None:
        """Durable for this bus once it returns."""
        ...

    def subscribe(self, pattern: EventPattern, handler: Handler) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class InProcessEventBus:
    def __init__(self, *, max_attempts: int = 3, retry_delay: float = 0.05) -> None:
        self._subscribers: list[tuple[EventPattern, Handler]] = []
        self._queue: asyncio.Queue[tuple[Event, int]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.dead: list[Event] = []  # given up on after max_attempts (logged)

    def subscribe(self, pattern: EventPattern, handler: Handler) -> None:
        self._subscribers.append((pattern, handler))

    async def publish(self, event: Event) -> None:
        await self._queue.put((event, 1))

    async def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.create_task(self._deliver())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None

    async def drain(self) -> None:
        """Until every published event was acknowledged (or given up on)."""
        await self._queue.join()

    async def _deliver(self) -> None:
        while True:
            event, attempt = await self._queue.get()
            try:
                await self._handle(event, attempt)
            finally:
                self._queue.task_done()

    async def _handle(self, event: Event, attempt: int) -> None:
        try:
            for pattern, handler in list(self._subscribers):
                if pattern.matches(event):
                    await handler(event)
        except asyncio.CancelledError:
            raise
        except Exception:
            if attempt >= self.max_attempts:
                log.exception("event %s/%s (%s) failed %d times; dropped", event.source,
                              event.type, event.id, attempt)
                self.dead.append(event)
                return
            log.warning("event %s failed (attempt %d); delivering again", event.id, attempt,
                        exc_info=True)
            await asyncio.sleep(self.retry_delay * attempt)
            await self._queue.put((event, attempt + 1))  # acknowledged only after the effect
