"""The workers' sweep: messages no stream entry names still get their turn.

A web process that stored a message and died before its XADD, an entry trimmed away, Redis
lost for a while: the row is in the database all the same. Every `every_seconds` each worker
asks the inbox for people with a message nobody is working on (older than `after_seconds`), or
one left `processing` longer than `stale_seconds`, at most `limit` of them, and kicks their
drains here (the per-person lock keeps two workers from running the same person at once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from bot.contracts.clock import Clock
from bot.gateway.inbox import InboxStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepPolicy:
    every_seconds: float = 5.0
    after_seconds: float = 5.0
    stale_seconds: float = 120.0
    limit: int = 100


class InboxSweep:
    def __init__(self, inbox: InboxStore, clock: Clock, kick: Callable[[str], None],
                 policy: SweepPolicy | None = None) -> None:
        self.inbox = inbox
        self.clock = clock
        self.kick = kick
        self.policy = policy or SweepPolicy()

    async def once(self) -> list[str]:
        now, p = self.clock.now(), self.policy
        users = await self.inbox.users_left_waiting(
            now - timedelta(seconds=p.after_seconds), now - timedelta(seconds=p.stale_seconds),
            p.limit)
        for user in users:
            self.kick(user)
        return users

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.policy.every_seconds)
            try:
                found = await self.once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("inbox sweep failed; trying again", exc_info=True)
                continue
            if found:  # often only people between two turns: not worth more than a debug line
                log.debug("inbox sweep: kicked %d person(s)", len(found))
