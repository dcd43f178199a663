"""The meter's ledger: each cost (an LLM call, a message) and each raise of an budget, with
when it happened (the `meter_ledger` table). A person's window is the last 24 hours of it:
no change of timezone, name or channel moves it, so no such change gives anyone a fresh
budget. Each message Valet sends has one row (its outbox id is unique here): counted
before it goes, never twice when it is tried again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.contracts.people import DaySpend
from bot.db import Database

WINDOW = timedelta(hours=24)
# The worst cost of the latest call refused in the window ($1: the person, $2: its start).
LATEST_REFUSED = ("(SELECT worst_micros FROM meter_ledger WHERE user_id = $1 AND at > $2"
                  " AND kind = 'refused' ORDER BY at DESC, id DESC LIMIT 1)")


@dataclass(frozen=True)
class Sent:
    """What the meter let out on a channel: messages, their parts and segments."""

    messages: int = 0
    parts: int = 0
    segments: int = 0


class Ledger:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def cost(self, user_id: str, at: datetime, *, llm: int = 0, raised: int = 0,
                   kind: str = "llm") -> None:
        """An LLM call's cost, or a raise of the budget, at `at`."""
        if llm or raised:
            await self.db.execute(
                "INSERT INTO meter_ledger (user_id, kind, at, llm_micros, raised_micros)"
                " VALUES ($1, $2, $3, $4, $5)", user_id, kind, at, llm, raised)

    async def refused(self, user_id: str, at: datetime, worst: int) -> None:
        """An LLM call was not made: at its worst cost it would have passed the budget."""
        await self.db.execute(
            "INSERT INTO meter_ledger (user_id, kind, at, worst_micros) VALUES ($1, 'refused',"
            " $2, $3)", user_id, at, worst)

    async def message(self, *, outbox_id: int, user_id: str | None, channel: str,
                      address: str, kind: str, at: datetime, micros: int, parts: int,
                      segments: int) -> bool:
        """A message let out, at its price; False when it was counted before (a retry)."""
        return await self.db.fetchval(
            "INSERT INTO meter_ledger (outbox_id, user_id, channel, address, kind, at,"
            " messages_micros, parts, segments) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            " ON CONFLICT (outbox_id) DO NOTHING RETURNING 1", outbox_id, user_id, channel,
            address, kind, at, micros, parts, segments) is not None

    async def admitted(self, outbox_id: int) -> bool:
        return await self.db.fetchval(
            "SELECT 1 FROM meter_ledger WHERE outbox_id = $1", outbox_id) is not None

    async def window(self, user_id: str, at: datetime) -> DaySpend:
        """The last 24 hours up to `at`, added up (`day`: the window's start, UTC)."""
        since = at - WINDOW
        row = await self.db.fetchrow(
            "SELECT COALESCE(SUM(llm_micros), 0) AS llm, COALESCE(SUM(messages_micros), 0)"
            " AS messages, COALESCE(SUM(raised_micros), 0) AS raised, " + LATEST_REFUSED
            + " AS refused FROM meter_ledger WHERE user_id = $1 AND at > $2", user_id, since)
        assert row is not None
        return DaySpend(since.isoformat(timespec="minutes"), int(row["llm"]),
                        int(row["messages"]), int(row["raised"]), int(row["refused"] or 0))

    async def frees_at(self, user_id: str, at: datetime) -> datetime:
        """When the oldest cost in the window leaves it (the window has room again soonest)."""
        oldest = await self.db.fetchval(
            "SELECT at FROM meter_ledger WHERE user_id = $1 AND at > $2"
            " AND (llm_micros > 0 OR messages_micros > 0) ORDER BY at LIMIT 1",
            user_id, at - WINDOW)
        return (oldest + WINDOW) if isinstance(oldest, datetime) else at

    async def sent_recently(self, user_id: str | None, channel: str, address: str, kind: str,
                            since: datetime) -> bool:
        """A message of this kind went to the person (or, unknown, the address) since then."""
        if user_id is not None:
            return await self.db.fetchval(
                "SELECT 1 FROM meter_ledger WHERE user_id = $1 AND kind = $2 AND at > $3"
                " LIMIT 1", user_id, kind, since) is not None
        return await self.db.fetchval(
            "SELECT 1 FROM meter_ledger WHERE channel = $1 AND address = $2 AND kind = $3"
            " AND at > $4 LIMIT 1", channel, address, kind, since) is not None

    async def sent(self, channel: str) -> Sent:
        """Everything the meter let out on the channel (what its service should have got)."""
        row = await self.db.fetchrow(
            "SELECT COUNT(*) AS n, COALESCE(SUM(parts), 0) AS parts,"
            " COALESCE(SUM(segments), 0) AS segments FROM meter_ledger"
            " WHERE channel = $1 AND outbox_id IS NOT NULL", channel)
        assert row is not None
        return Sent(int(row["n"]), int(row["parts"]), int(row["segments"]))

    async def forget_before(self, at: datetime) -> int:
        """Rows older than any window or door-reply interval looks at (two days)."""
        return await self.db.execute("DELETE FROM meter_ledger WHERE at < $1", at - 2 * WINDOW)
