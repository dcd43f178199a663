"""Postgres behind the Database port: an asyncpg pool; a transaction holds one connection.

SQL arrives with `$1, $2` placeholders already, so it passes through untouched. Every
connection runs with `timezone = 'UTC'`: asyncpg returns TIMESTAMPTZ as aware UTC datetimes
anyway, and this keeps text casts, date_trunc and friends in UTC too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from bot.db.port import Row

DEFAULT_POOL_SIZE = 10
DEFAULT_STATEMENT_CACHE = 512  # prepared statements per connection: Valet issues ~200 kinds
# Query parameters Valet reads itself; asyncpg would reject them as server settings.
_VALET_PARAMS = frozenset({"pool_size", "statement_cache_size"})
_COUNTED = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "COPY"})


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """(the DSN for asyncpg, the Valet-only options that were in its query string)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    options = {k: v for k, v in query if k in _VALET_PARAMS}
    rest = urlencode([(k, v) for k, v in query if k not in _VALET_PARAMS])
    return urlunsplit(parts._replace(query=rest)), options


def rowcount(status: str) -> int:
    """Rows a statement changed, from asyncpg's status: "UPDATE 3" -> 3, "INSERT 0 1" -> 1."""
    words = status.split()
    if len(words) >= 2 and words[0] in _COUNTED and words[-1].isdigit():
        return int(words[-1])
    return 0


def _check(args: tuple[Any, ...]) -> tuple[Any, ...]:
    # asyncpg would read a naive datetime as local time; refuse it, as the SQLite side does.
    for value in args:
        if isinstance(value, datetime) and value.tzinfo is None:
            raise ValueError("naive datetime given to the database; use timezone-aware UTC times")
    return args


class _Queries:
    """The four query methods over a transaction's connection, or over the pool (which has
    the same methods: each statement then borrows a connection for itself)."""

    def __init__(self, conn: asyncpg.Connection | asyncpg.Pool) -> None:
        self._conn = conn

    async def execute(self, sql: str, *args: Any) -> int:
        return rowcount(await self._conn.execute(sql, *_check(args)))

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return [dict(r) for r in await self._conn.fetch(sql, *_check(args))]

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        record = await self._conn.fetchrow(sql, *_check(args))
        return dict(record) if record is not None else None

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._conn.fetchval(sql, *_check(args))


class PostgresDatabase(_Queries):
    dialect = "postgres"

    def __init__(self, pool: asyncpg.Pool, size: int = DEFAULT_POOL_SIZE) -> None:
        super().__init__(pool)
        self._pool = pool
        self.pool_size = size

    @classmethod
    async def open(cls, url: str, *, pool_size: int | None = None,
                   statement_cache_size: int | None = None) -> PostgresDatabase:
        """`pool_size` and `statement_cache_size` from the configuration (database:); the
        URL's ?pool_size= and ?statement_cache_size= win when given."""
        dsn, options = split_url(url)
        size = int(options.get("pool_size", pool_size or DEFAULT_POOL_SIZE))
        if size < 1:
            raise ValueError(f"pool_size must be at least 1, not {size}")
        cache = int(options.get("statement_cache_size", DEFAULT_STATEMENT_CACHE
                                if statement_cache_size is None else statement_cache_size))
        if cache < 0:
            raise ValueError(f"statement_cache_size must be 0 or more, not {cache}")
        # Statements are prepared once per connection and kept (asyncpg's cache, sized here):
        # a turn's statements are then each one round trip with no parse or plan.
        # timezone goes in the startup packet, not an init-time SET: the pool's RESET ALL on
        # every release would undo a SET, but resets to the startup value.
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=size, reset=_keep_session,
                                         statement_cache_size=cache,
                                         server_settings={"timezone": "UTC"})
        return cls(pool, size)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Queries]:
        async with self._pool.acquire() as conn, conn.transaction():
            yield _Queries(conn)

    async def close(self) -> None:
        await self._pool.close()


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Replaces the pool's reset query on release (advisory unlock, CLOSE ALL, UNLISTEN,
    RESET ALL): one more round trip per statement, measured at about half of receive()'s
    time. Valet holds no session state to reset: locks are transaction-scoped, nothing
    LISTENs, and settings come from the startup packet. A failed transaction is still rolled
    back by the pool's own cleanup before this runs."""
