"""Which channels work: a channel whose credentials are rejected (`ChannelDown`) is down until
a message goes through it again. While it is down its messages wait in the outbox (never
dead-lettered for it), one probe goes every `probe_seconds`, `/readyz` names it, and the owner
is told once, on another channel where they have one. Per process: each deliverer learns it
from its own sends."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outage:
    reason: str
    since: datetime


class ChannelHealth:
    def __init__(self, probe_seconds: float = 30.0) -> None:
        self.probe = timedelta(seconds=probe_seconds)
        self._down: dict[str, Outage] = {}
        self._probed: dict[str, datetime] = {}

    def is_down(self, channel: str) -> bool:
        return channel in self._down

    def outages(self) -> dict[str, Outage]:
        return dict(self._down)

    def down(self, channel: str, reason: str, at: datetime) -> Outage | None:
        """Mark it down; the outage when it just went down (None: it already was)."""
        self._probed[channel] = at
        if channel in self._down:
            return None
        outage = self._down[channel] = Outage(reason, at)
        log.error("channel %s is down: %s (its messages wait)", channel, reason)
        return outage

    def up(self, channel: str) -> bool:
        """A message went through: True when it had been down."""
        if self._down.pop(channel, None) is None:
            return False
        log.warning("channel %s works again: its waiting messages go out", channel)
        return True

    def may_probe(self, channel: str, now: datetime) -> bool:
        """While down, one message tries every `probe` (the first one claims the try)."""
        last = self._probed.get(channel)
        if last is not None and now - last < self.probe:
            return False
        self._probed[channel] = now
        return True
