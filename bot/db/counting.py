"""Statements counted by who issued them: a Database that wraps another and records each
statement it passes on, with the callers outside the database layer that led to it.

Used by `make bench` (statements per plain turn, by issuer) and by the test that keeps a plain
turn within its statement budget. A transaction counts its BEGIN and COMMIT too: on Postgres
each is a round trip like any statement.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from bot.db.port import Database, Queries, Row
from bot.plumbing import logs

_DB_DIR = str(Path(__file__).resolve().parent)
_SKIP = (_DB_DIR, "contextlib.py", f"{Path(sys.base_prefix)}")
_CHAIN = 12  # callers kept per statement: enough to see which task's path led to it


@dataclass(frozen=True)
class Statement:
    sql: str  # the first words: "INSERT INTO inbox" -> "INSERT inbox", "SELECT users", "BEGIN"
    chain: tuple[str, ...]  # "module:qualname" of the callers, innermost first
    # the turn it was issued in (bot.plumbing.logs), also in its sub-tasks
    turn_id: str | None = None

    @property
    def issuer(self) -> str:
        return self.chain[0] if self.chain else "?"

    def under(self, qualname: str) -> bool:
        """Issued by a call path that went through `qualname` ("Gateway._drain"), in this
        task (a task the path started has a chain of its own)."""
        return any(c.endswith(f":{qualname}") for c in self.chain)


@dataclass
class StatementLog:
    statements: list[Statement] = field(default_factory=list)

    def add(self, sql: str, chain: tuple[str, ...]) -> None:
        self.statements.append(Statement(sql, chain, logs.turn_id.get()))

    def clear(self) -> None:
        self.statements.clear()

    def __len__(self) -> int:
        return len(self.statements)

    def under(self, *qualnames: str) -> list[Statement]:
        """The statements issued through any of these calls."""
        return [s for s in self.statements if any(s.under(q) for q in qualnames)]


def by_issuer(statements: list[Statement]) -> Counter[str]:
    return Counter(f"{s.issuer} ({s.sql})" for s in statements)


def report(statements: list[Statement], indent: str = "    ") -> list[str]:
    """One line per issuer and statement kind, most first."""
    return [f"{indent}{n:3d}  {what}" for what, n in by_issuer(statements).most_common()]


def _chain(frame: FrameType | None) -> tuple[str, ...]:
    chain: list[str] = []
    while frame is not None and len(chain) < _CHAIN:
        code = frame.f_code
        if not code.co_filename.startswith(_SKIP) and "contextlib" not in code.co_filename:
            chain.append(f"{frame.f_globals.get('__name__', '?')}:{code.co_qualname}")
        frame = frame.f_back
    return tuple(chain)


def _head(sql: str) -> str:
    """The verb and the first table named outside parentheses."""
    words = sql.split()
    verb = words[0].upper() if words else ""
    if verb == "WITH" and any(f" AS ({w}" in sql for w in ("INSERT", "UPDATE", "DELETE")):
        return f"{sql.count(' AS (') + 1} writes in one statement"
    depth = 0
    for i, word in enumerate(words[:-1]):
        if depth == 0 and word.upper() in ("INTO", "FROM", "UPDATE"):
            return f"{verb} {words[i + 1].strip('(),')}"
        depth += word.count("(") - word.count(")")
    return verb


class _CountedQueries:
    def __init__(self, inner: Queries, log: StatementLog) -> None:
        self._inner = inner
        self._log = log

    def _note(self, sql: str) -> None:
        self._log.add(_head(sql), _chain(sys._getframe(2)))

    async def execute(self, sql: str, *args: Any) -> int:
        self._note(sql)
        return await self._inner.execute(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        self._note(sql)
        return await self._inner.fetch(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        self._note(sql)
        return await self._inner.fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self._note(sql)
        return await self._inner.fetchval(sql, *args)


class CountingDatabase(_CountedQueries):
    """`db` with every statement it runs recorded in `log`."""

    def __init__(self, db: Database, log: StatementLog | None = None) -> None:
        self.log = log if log is not None else StatementLog()
        super().__init__(db, self.log)
        self.db = db
        self.dialect = db.dialect

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Queries]:
        chain = _chain(sys._getframe(2))
        self.log.add("BEGIN", chain)
        async with self.db.transaction() as tx:
            yield _CountedQueries(tx, self.log)
            self.log.add("COMMIT", chain)

    async def close(self) -> None:
        await self.db.close()
