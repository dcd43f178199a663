"""The `notes` table: a person's notes (title + text), kept per user."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.db import Database


@dataclass(frozen=True)
class Note:
    id: int
    title: str
    body: str
    created_at: datetime

    def line(self, tz: Any, body_chars: int = 300) -> str:
        body = self.body if len(self.body) <= body_chars else self.body[:body_chars] + "…"
        when = self.created_at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
        return f"#{self.id} {self.title} ({when}): {body}"


class NoteStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, user_id: str, title: str, body: str, at: datetime) -> Note:
        note_id = await self.db.fetchval(
            "INSERT INTO notes (user_id, title, body, created_at) VALUES ($1, $2, $3, $4)"
            " RETURNING id", user_id, title, body, at)
        return Note(int(note_id), title, body, at)

    async def recent(self, user_id: str, limit: int = 10) -> list[Note]:
        rows = await self.db.fetch(
            "SELECT id, title, body, created_at FROM notes WHERE user_id = $1"
            " ORDER BY id DESC LIMIT $2", user_id, limit)
        return [Note(**r) for r in rows]

    async def search(self, user_id: str, query: str, limit: int = 10) -> list[Note]:
        """Notes whose title or text contains every word of the query (any case)."""
        words = query.lower().split()[:8]
        if not words:
            return await self.recent(user_id, limit)
        clauses = " AND ".join(
            f"(LOWER(title) LIKE ${i + 2} ESCAPE '\\' OR LOWER(body) LIKE ${i + 2} ESCAPE '\\')"
            for i in range(len(words)))
        patterns = [f"%{_escape_like(w)}%" for w in words]
        rows = await self.db.fetch(
            f"SELECT id, title, body, created_at FROM notes WHERE user_id = $1 AND {clauses}"
            f" ORDER BY id DESC LIMIT ${len(words) + 2}", user_id, *patterns, limit)
        return [Note(**r) for r in rows]

    async def get(self, user_id: str, note_id: int) -> Note | None:
        row = await self.db.fetchrow(
            "SELECT id, title, body, created_at FROM notes WHERE user_id = $1 AND id = $2",
            user_id, note_id)
        return Note(**row) if row else None

    async def delete(self, user_id: str, note_id: int) -> Note | None:
        row = await self.db.fetchrow(
            "DELETE FROM notes WHERE user_id = $1 AND id = $2"
            " RETURNING id, title, body, created_at", user_id, note_id)
        return Note(**row) if row else None


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
