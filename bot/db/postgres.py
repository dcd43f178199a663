"""Postgres behind the Database port: an asyncpg pool; a transaction holds one connection.

SQL arrives with `$1, $2` placeholders already, so it passes through untouched. Every
connection runs with `timezone = 'UTC'`: asyncpg returns TIMESTAMPTZ as aware UTC datetimes
anyway, and this keeps text casts, date_trunc and friends in UTC too.

A server that cannot be reached (refused, shut down, a connection lost mid-statement, or one
that read the server's goodbye before its close: ended, never put back in the pool) is
`DatabaseUnavailable` for every caller, whatever asyncpg or the socket raised: the callers
that keep going through an outage (the webhooks' spool, the pollers, the log's once-a-minute
line: bot.plumbing.outages) recognise one type. The pool opens new connections once it is back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from bot.db.port import DatabaseUnavailable, Row
from bot.text.redact import redact_text

T = TypeVar("T")

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


def lost_connection(err: BaseException) -> bool:
    """The server is not there (refused, shut down, the connection gone), as opposed to a
    statement it refused."""
    if isinstance(err, OSError | asyncpg.PostgresConnectionError
                  | asyncpg.exceptions.OperatorInterventionError):
        return True
    # A connection out of step with its server: it read the server's goodbye (FATAL, as a
    # fast shutdown sends) before it noticed the close, and a statement on it fails with
    # "cannot switch to state ...; another operation is in progress" (`out_of_step`).
    if out_of_step(err):
        return True
    # asyncpg says a connection that died under it is closed; its other interface errors
    # (a connection used after release...) are bugs of ours.
    return isinstance(err, asyncpg.InterfaceError) and "closed" in str(err)


def out_of_step(err: BaseException) -> bool:
    """asyncpg's protocol state no longer matches the server's: the connection is useless
    (tests/integration/test_database_goodbye.py)."""
    return isinstance(err, asyncpg.InternalClientError)


def unavailable(err: BaseException) -> DatabaseUnavailable:
    reason = redact_text(str(err).strip().splitlines()[0] if str(err).strip() else "")
    return DatabaseUnavailable(f"the Postgres server cannot be reached: {type(err).__name__}"
                               + (f": {reason}" if reason else ""))


class _Queries:
    """The four query methods over a transaction's connection, or over the pool (which has
    the same methods: each statement then borrows a connection for itself)."""

    def __init__(self, conn: asyncpg.Connection | asyncpg.Pool,
                 pool: asyncpg.Pool | None = None) -> None:
        self._conn = conn
        self._pool_of = pool  # whose connections are replaced when one turns out dead

    async def execute(self, sql: str, *args: Any) -> int:
        return rowcount(await self._run("execute", sql, args))

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return [dict(r) for r in await self._run("fetch", sql, args)]

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        record = await self._run("fetchrow", sql, args)
        return dict(record) if record is not None else None

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._run("fetchval", sql, args)

    async def _run(self, method: str, sql: str, args: tuple[Any, ...]) -> Any:
        return await self._reached(self._on(self._conn, method, sql, args))

    async def _on(self, conn: asyncpg.Connection | asyncpg.Pool, method: str, sql: str,
                  args: tuple[Any, ...]) -> Any:
        try:
            return await getattr(conn, method)(sql, *_check(args))
        except Exception as err:
            if out_of_step(err) and isinstance(conn, asyncpg.Connection
                                               | asyncpg.pool.PoolConnectionProxy):
                conn.terminate()  # never back into the pool for the next statement to fail
            raise

    async def _reached(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except Exception as err:
            if not lost_connection(err):
                raise
            await self.lost()
            raise unavailable(err) from err

    async def lost(self) -> None:
        """A connection turned out dead (the server restarted): every connection the pool
        holds is from before, so each is replaced at its next use, rather than each failing
        one statement first."""
        if self._pool_of is not None:
            await self._pool_of.expire_connections()


class PostgresDatabase(_Queries):
    dialect = "postgres"

    def __init__(self, pool: asyncpg.Pool, size: int = DEFAULT_POOL_SIZE) -> None:
        super().__init__(pool, pool)
        self._pool = pool
        self.pool_size = size

    async def _run(self, method: str, sql: str, args: tuple[Any, ...]) -> Any:
        # Each statement borrows a connection for itself (what the pool's own fetch does),
        # held here so that one found out of step is ended rather than put back.
        async def borrowed() -> Any:
            async with self._pool.acquire() as conn:
                return await self._on(conn, method, sql, args)

        return await self._reached(borrowed())

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
        raised: BaseException | None = None  # by the caller's block: never translated
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                try:
                    yield _Queries(conn, self._pool)
                except BaseException as err:
                    raised = err
                    raise
        except Exception as err:
            if err is not raised and lost_connection(err):
                await self.lost()
                raise unavailable(err) from err
            raise

    async def close(self) -> None:
        await self._pool.close()


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Replaces the pool's reset query on release (advisory unlock, CLOSE ALL, UNLISTEN,
    RESET ALL): one more round trip per statement, measured at about half of receive()'s
    time. Valet holds no session state to reset: locks are transaction-scoped, nothing
    LISTENs, and settings come from the startup packet. A failed transaction is still rolled
    back by the pool's own cleanup before this runs."""
