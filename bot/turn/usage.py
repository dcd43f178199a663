"""What the LLM cost, per turn: prompt and completion tokens and the requests the turn's loop
made, one row per turn (table `turn_usage`), written once by the orchestrator after the turn is
stored. The owner's console adds the rows up by person and day.

A turn redone after a crash keeps its turn id, so it is counted once. Calls made outside a
turn's loop (reading a free-text approval reply, memory extraction) are not counted here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from bot.db import Database, Queries
from bot.llm.port import TokenUsage


@dataclass(frozen=True)
class DailyUsage:
    """One person's LLM use on one day (in the zone the caller asked for)."""

    user_id: str
    day: date
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_requests: int = 0
    turns: int = 0


class UsageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, turn_id: str, user_id: str, channel: str, at: datetime,
                     usage: TokenUsage, llm_requests: int, q: Queries | None = None) -> None:
        """The turn's use, once: a second record of the same turn changes nothing. `q`: the
        transaction (or batch) that stores the turn."""
        await (q or self.db).execute(
            "INSERT INTO turn_usage (turn_id, user_id, channel, at, prompt_tokens,"
            " completion_tokens, llm_requests) VALUES ($1, $2, $3, $4, $5, $6, $7)"
            " ON CONFLICT (turn_id) DO NOTHING", turn_id, user_id, channel, at,
            usage.input_tokens, usage.output_tokens, llm_requests)

    async def daily(self, start: datetime, end: datetime, timezone: str) -> list[DailyUsage]:
        """Use between `start` (inclusive) and `end`, by person and day in `timezone`,
        in day order."""
        rows = await self.db.fetch(
            "SELECT user_id, at, prompt_tokens, completion_tokens, llm_requests FROM turn_usage"
            " WHERE at >= $1 AND at < $2 ORDER BY at", start, end)
        zone = ZoneInfo(timezone)
        totals: dict[tuple[str, date], list[int]] = {}
        for row in rows:
            at = row["at"] if isinstance(row["at"], datetime) else \
                datetime.fromisoformat(str(row["at"]))
            key = (row["user_id"], at.astimezone(zone).date())
            sums = totals.setdefault(key, [0, 0, 0, 0])
            sums[0] += int(row["prompt_tokens"])
            sums[1] += int(row["completion_tokens"])
            sums[2] += int(row["llm_requests"])
            sums[3] += 1
        return [DailyUsage(user, day, *sums)
                for (user, day), sums in sorted(totals.items(), key=lambda kv: kv[0][1])]
