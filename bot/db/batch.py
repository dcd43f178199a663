"""Writes that commit together, in one round trip where the database allows it.

A `Batch` collects statements: it has the `Queries` methods that write, so a store's method
that takes `q` (the outbox's enqueue, the inbox's close, the history's append...) writes into
it unchanged. `run(db)` then commits them all or none: on Postgres as one statement (every
statement but the last becomes a data-modifying WITH clause: one round trip, atomic), on
SQLite in one transaction (a statement there costs microseconds, not a round trip).

A batch runs later, so what a statement would return is not known when it is added:
`execute` says 0 rows and `fetchval` None. Put in a batch only writes whose result the caller
does not read, and that touch different rows (on Postgres they all see the database as it
was before the batch).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from bot.db.port import Database, Queries, Row

_PLACEHOLDER = re.compile(r"\$(\d+)")
_LITERAL = re.compile(r"'(?:[^']|'')*'")
_WRITES = ("INSERT", "UPDATE", "DELETE")


class Batch:
    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    async def execute(self, sql: str, *args: Any) -> int:
        self.statements.append((sql, args))
        return 0

    async def fetchval(self, sql: str, *args: Any) -> Any:
        """For `INSERT ... RETURNING` whose answer the caller does not need."""
        self.statements.append((sql, args))
        return None

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        raise TypeError("a batch only writes: read before it, or after it has run")

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        raise TypeError("a batch only writes: read before it, or after it has run")

    async def run(self, db: Database) -> None:
        """Commit every statement, or none."""
        if not self.statements:
            return
        if len(self.statements) == 1:
            only, values = self.statements[0]
            await db.execute(only, *values)
        elif db.dialect == "postgres" and all(_combinable(sql) for sql, _ in self.statements):
            sql, args = combined(self.statements)
            await db.execute(sql, *args)
        else:
            async with db.transaction() as tx:
                await self.run_in(tx)
        self.statements.clear()

    async def run_in(self, q: Queries) -> None:
        """Run the statements in the caller's transaction, one by one."""
        for sql, args in self.statements:
            await q.execute(sql, *args)


def combined(statements: list[tuple[str, tuple[Any, ...]]]) -> tuple[str, list[Any]]:
    """One Postgres statement doing all of them: `WITH w0 AS (first), w1 AS (second) last`,
    each statement's `$n` moved past the parameters of those before it."""
    parts: list[str] = []
    args: list[Any] = []
    for sql, values in statements:
        parts.append(_shifted(sql, len(args)))
        args.extend(values)
    *first, last = parts
    clauses = ", ".join(f"w{i} AS ({sql})" for i, sql in enumerate(first))
    return f"WITH {clauses} {last}", args


# Both kept: a turn's batch is the same few statements every time (a few hundred kinds in all).
@functools.lru_cache(maxsize=1024)
def _shifted(sql: str, offset: int) -> str:
    return _PLACEHOLDER.sub(lambda m: f"${int(m.group(1)) + offset}", sql)


@functools.lru_cache(maxsize=1024)
def _combinable(sql: str) -> bool:
    # A WITH clause takes INSERT, UPDATE and DELETE; a `$` inside a string literal would be
    # renumbered, so such a statement runs on its own in a transaction instead.
    return sql.lstrip()[:6].upper() in _WRITES and \
        not any("$" in literal for literal in _LITERAL.findall(sql))
