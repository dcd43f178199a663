"""Conversation history, per user: appended once per turn, never rewritten.

(Long-term memory, recalled before a turn and extracted after it, is bot.memory.facts,
.recall and .extract.)
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from bot.db import Database, Queries, Row
from bot.loop.masking import WRITTEN_BY

Message = dict[str, Any]
_COLUMNS = 9
_ROWS_PER_STATEMENT = 500  # far below either database's limit on parameters


class HistoryStore:
    def __init__(self, db: Database, load_limit: int = 200) -> None:
        self.db = db
        self.load_limit = load_limit

    async def load(self, user_id: str, limit: int | None = None, *, after_seq: int = 0
                   ) -> list[Message]:
        """The most recent messages of this user's conversation (those after `after_seq`:
        the ones a summary does not cover), oldest first."""
        return [m for _, m in await self.load_numbered(user_id, limit, after_seq=after_seq)]

    async def load_numbered(self, user_id: str, limit: int | None = None, *,
                            after_seq: int = 0) -> list[tuple[int, Message]]:
        """`load`, each message with its place in the conversation (its seq)."""
        rows = await self.db.fetch(
            "SELECT seq, role, content, tool_calls, tool_call_id, written_by FROM messages"
            " WHERE user_id = $1 AND seq > $2 ORDER BY seq DESC LIMIT $3",
            user_id, after_seq, limit or self.load_limit)
        return [(int(r["seq"]), _to_message(r)) for r in reversed(rows)]

    async def load_oldest(self, user_id: str, after_seq: int, limit: int
                          ) -> list[tuple[int, Message]]:
        """The oldest messages after `after_seq`, oldest first, with their seq."""
        rows = await self.db.fetch(
            "SELECT seq, role, content, tool_calls, tool_call_id, written_by FROM messages"
            " WHERE user_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            user_id, after_seq, limit)
        return [(int(r["seq"]), _to_message(r)) for r in rows]

    async def append(self, user_id: str, turn_id: str, messages: list[Message], *,
                     channel: str, at: datetime, q: Queries | None = None) -> None:
        """Write one turn's messages together, in one statement: a turn is stored whole or
        not at all. `q`: the transaction (or batch) that stores the turn with its reply."""
        values = [(user_id, turn_id, msg["role"], msg.get("content"),
                   json.dumps(msg["tool_calls"]) if msg.get("tool_calls") else None,
                   msg.get("tool_call_id"), channel, at, msg.get(WRITTEN_BY) or None)
                  for msg in messages]
        chunks = [values[i:i + _ROWS_PER_STATEMENT]
                  for i in range(0, len(values), _ROWS_PER_STATEMENT)]
        if q is None and len(chunks) > 1:
            async with self.db.transaction() as tx:
                for chunk in chunks:
                    await _insert(tx, chunk)
            return
        for chunk in chunks:
            await _insert(q or self.db, chunk)

    async def turn_reply(self, turn_id: str) -> str | None:
        """The final answer of a stored turn; None if the turn was never written."""
        rows = await self.db.fetch(
            "SELECT role, content FROM messages WHERE turn_id = $1 ORDER BY seq DESC LIMIT 1",
            turn_id)
        if not rows:
            return None
        return rows[0]["content"] if rows[0]["role"] == "assistant" else ""

    async def count(self, user_id: str, after_seq: int = 0) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM messages WHERE user_id = $1 AND seq > $2", user_id,
            after_seq) or 0)


async def _insert(q: Queries, rows: list[tuple[Any, ...]]) -> None:
    """Rows in the order given (their seq follows it)."""
    places = ", ".join("(" + ", ".join(f"${n * _COLUMNS + i}" for i in range(1, _COLUMNS + 1))
                       + ")" for n in range(len(rows)))
    await q.execute(
        "INSERT INTO messages (user_id, turn_id, role, content, tool_calls, tool_call_id,"
        f" channel, created_at, written_by) VALUES {places}", *(v for row in rows for v in row))


def _to_message(row: Row) -> Message:
    msg: Message = {"role": row["role"], "content": row["content"]}
    if row["tool_calls"]:
        msg["tool_calls"] = json.loads(row["tool_calls"])
    if row["tool_call_id"]:
        msg["tool_call_id"] = row["tool_call_id"]
    if row["written_by"]:
        msg[WRITTEN_BY] = row["written_by"]
    return msg
