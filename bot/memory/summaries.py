"""The running summary of each person's conversation, versioned: every compaction adds a
version covering the messages up to `through_seq` (bot.memory.compaction); the latest is what
the request view carries ahead of the messages after it. The raw history is never changed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.db import Database

KEPT_VERSIONS = 10  # older versions are dropped (the latest holds everything they did)


@dataclass(frozen=True)
class Summary:
    user_id: str
    version: int
    through_seq: int  # the last message (messages.seq) it covers
    text: str


class SummaryStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def latest(self, user_id: str) -> Summary | None:
        row = await self.db.fetchrow(
            "SELECT version, through_seq, text FROM conversation_summaries WHERE user_id = $1"
            " ORDER BY version DESC LIMIT 1", user_id)
        if row is None:
            return None
        return Summary(user_id, int(row["version"]), int(row["through_seq"]), row["text"])

    async def add(self, summary: Summary, at: datetime) -> bool:
        """Store the next version; False when another compaction stored it first."""
        async with self.db.transaction() as tx:
            added = await tx.execute(
                "INSERT INTO conversation_summaries (user_id, version, through_seq, text,"
                " created_at) VALUES ($1, $2, $3, $4, $5)"
                " ON CONFLICT (user_id, version) DO NOTHING",
                summary.user_id, summary.version, summary.through_seq, summary.text, at)
            await tx.execute("DELETE FROM conversation_summaries WHERE user_id = $1"
                             " AND version <= $2", summary.user_id,
                             summary.version - KEPT_VERSIONS)
        return added == 1
