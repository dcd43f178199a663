"""What a sender Valet does not let in can make it send: almost nothing.

Every SMS costs the operator money, and strangers choose how many texts they send: SMS pumping
(texting a number so that it answers premium or far-away numbers) is among the most common
frauds against a public number. On a channel that is limited (SMS; `StrangerLimits` per
channel, from the composition root), a reply to a stranger (a pairing code, "unknown link
code") is taken from two allowances before it is made:

- one per sender per `per_sender` (24 hours), whatever they send;
- `per_hour` for all strangers of the channel together, in an hour that starts with the first
  reply; the first stranger refused by it has the owner told (once per hour: its key).

And none at all to an address the channel may not write to (a country outside
`sms.allowed_countries`). A refused reply is silence, and nothing is made for it: no pairing
request, so the same sender is answered once the allowances allow it again. Each allowance is
a compare-and-set on one row, so concurrent strangers (or processes) cannot slip past it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from bot.db import Database

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)


class Verdict(Enum):
    REPLY = "reply"  # the one reply may go
    QUIET = "quiet"  # this sender had its reply in the window
    CAPPED = "capped"  # the channel's hourly allowance for strangers is used up
    UNREACHABLE = "unreachable"  # the channel may not write there (a country not allowed)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    # CAPPED: when the hour started, and whether this is its first refusal (the owner is
    # told then, once).
    window_start: datetime | None = None
    first_refused: bool = False
    window_ends: datetime | None = None

    @property
    def may_reply(self) -> bool:
        return self.verdict is Verdict.REPLY


@dataclass(frozen=True)
class StrangerLimits:
    per_sender: timedelta
    per_hour: int
    reachable: Callable[[str], bool] = lambda address: True


class StrangerReplies:
    def __init__(self, db: Database, limits: Mapping[str, StrangerLimits]) -> None:
        self.db = db
        self.limits = dict(limits)

    async def take(self, channel: str, address: str, at: datetime) -> Decision:
        """One reply to this stranger, if both allowances have it."""
        limits = self.limits.get(channel)
        if limits is None:
            return Decision(Verdict.REPLY)
        if not limits.reachable(address):
            log.info("no reply to %s %s: not a destination Valet may write to", channel,
                     address)
            return Decision(Verdict.UNREACHABLE)
        taken = await self.db.fetchval(
            "INSERT INTO stranger_replies (channel, address, replied_at) VALUES ($1, $2, $3)"
            " ON CONFLICT (channel, address) DO UPDATE SET replied_at = excluded.replied_at"
            " WHERE stranger_replies.replied_at <= $4 RETURNING 1",
            channel, address, at, at - limits.per_sender)
        if taken is None:
            return Decision(Verdict.QUIET)
        window = await self.db.fetchrow(
            "INSERT INTO stranger_windows (channel, window_start, replies) VALUES ($1, $2, 1)"
            " ON CONFLICT (channel) DO UPDATE SET"
            " replies = CASE WHEN stranger_windows.window_start <= $3 THEN 1"
            "                ELSE stranger_windows.replies + 1 END,"
            " window_start = CASE WHEN stranger_windows.window_start <= $3 THEN $2"
            "                     ELSE stranger_windows.window_start END"
            " RETURNING replies, window_start", channel, at, at - HOUR)
        assert window is not None
        used, started = int(window["replies"]), window["window_start"]
        if used <= limits.per_hour:
            return Decision(Verdict.REPLY)
        # Refused: the sender's own allowance is given back, so it is answered once the hour
        # is over (nothing was made for this message).
        await self.db.execute(
            "DELETE FROM stranger_replies WHERE channel = $1 AND address = $2"
            " AND replied_at = $3", channel, address, at)
        if used == limits.per_hour + 1:
            log.warning("%d replies to strangers on %s within an hour: no more until %s",
                        limits.per_hour, channel, started + HOUR)
        return Decision(Verdict.CAPPED, window_start=started,
                        first_refused=used == limits.per_hour + 1, window_ends=started + HOUR)
