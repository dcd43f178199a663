"""The `reminders` table: what a person asked to be reminded of, and when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from bot.db import Database


@dataclass(frozen=True)
class Reminder:
    id: int
    text: str
    due_at: datetime
    timezone: str
    status: str


class ReminderStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, user_id: str, text: str, due_at: datetime, timezone: str, *,
                  status: str, source_text: str, at: datetime) -> Reminder:
        reminder_id = await self.db.fetchval(
            "INSERT INTO reminders (user_id, text, due_at, timezone, status, source_text,"
            " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            user_id, text, due_at.astimezone(UTC), timezone, status, source_text, at)
        return Reminder(int(reminder_id), text, due_at, timezone, status)

    async def upcoming(self, user_id: str, limit: int = 20) -> list[Reminder]:
        rows = await self.db.fetch(
            "SELECT id, text, due_at, timezone, status FROM reminders WHERE user_id = $1"
            " AND status IN ('draft', 'pending') ORDER BY due_at LIMIT $2", user_id, limit)
        return [Reminder(**r) for r in rows]
