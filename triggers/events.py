"""Events: publish/subscribe with pattern matching behind a small EventBus protocol.

The bus Valet runs is the stored one (triggers.event_store): publishing is an INSERT, so an
event is durable before `POST /events` acknowledges it; dispatch is at-least-once (a handler
that raises gets the event again, up to a limit). A Redis Streams bus (consumer groups, XACK
after the effect) would fit the same protocol with the table still the truth. Handlers must
tolerate a second delivery: the engine's run key (the event id) makes one a no-op.
"""

from __future__ import annotations

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
    async def publish(self, event: Event) -> bool:
        """Durable once it returns; False when this event's id was published before."""
        ...

    def subscribe(self, pattern: EventPattern, handler: Handler) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...
