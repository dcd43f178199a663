"""SQLite behind the Database port: one file, WAL, one connection.

Statements run directly on the event loop thread: on a small WAL database they take
microseconds, far less than a hop to a worker thread (about 140 µs each, measured with
`make bench`). An asyncio lock keeps a transaction's statements together: while one task is
inside a transaction, other tasks' statements wait for it to commit.

This is the embedded, single-process default. Another process writing the same file (a
`valet pair approve` from a shell) briefly blocks the loop for at most `busy_timeout`.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.db.port import Row
from bot.plumbing.private import narrow_existing, private_file

_PLACEHOLDER = re.compile(r"\$(\d+)")
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f+00:00"


def _adapt_datetime(value: datetime) -> str:
    """`_TIME_FORMAT`, written by isoformat (a dozen times a turn: strftime is slower)."""
    if value.tzinfo is None:
        raise ValueError("naive datetime given to the database; use timezone-aware UTC times")
    return (value if value.tzinfo is UTC else value.astimezone(UTC)).isoformat(
        " ", "microseconds")


def _convert_timestamp(raw: bytes) -> datetime:
    return datetime.fromisoformat(raw.decode())


sqlite3.register_adapter(datetime, _adapt_datetime)
sqlite3.register_converter("TIMESTAMPTZ", _convert_timestamp)


class _Queries:
    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def execute(self, sql: str, *args: Any) -> int:
        return await self._db._run(self._db._execute, sql, args)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self._db._run(self._db._fetch, sql, args)

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        rows = await self.fetch(sql, *args)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, *args: Any) -> Any:
        row = await self.fetchrow(sql, *args)
        return next(iter(row.values())) if row else None


class SQLiteDatabase:
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = asyncio.Lock()
        self._in_tx: asyncio.Task[Any] | None = None
        self._sql_cache: dict[str, str] = {}
        self._q = _Queries(self)

    @classmethod
    async def open(cls, url: str) -> SQLiteDatabase:
        path = file_of(url)
        if path != ":memory:":
            # 0600 before SQLite opens it: its -wal and -shm take the file's mode
            private_file(Path(path))
            narrow_existing(Path(f"{path}-wal"), Path(f"{path}-shm"))
        return cls(_open_connection(path))

    async def _run(self, fn: Any, sql: str, args: tuple[Any, ...]) -> Any:
        translated = self._sql_cache.get(sql)
        if translated is None:
            translated = self._sql_cache[sql] = _PLACEHOLDER.sub(r"?\1", sql)
        if self._in_tx is not None and self._in_tx is asyncio.current_task():
            return fn(translated, args)
        if not self._lock.locked():
            return fn(translated, args)  # no transaction open: nothing to wait for
        async with self._lock:
            return fn(translated, args)

    def _execute(self, sql: str, args: tuple[Any, ...]) -> int:
        cur = self._conn.execute(sql, args)
        if cur.description is not None:
            cur.fetchall()  # ... RETURNING counts its rows only once they are stepped through
        return max(cur.rowcount, 0)  # a SELECT reports -1; Postgres's "SELECT n" counts as 0

    def _fetch(self, sql: str, args: tuple[Any, ...]) -> list[Row]:
        cur = self._conn.execute(sql, args)
        names = [d[0] for d in cur.description or ()]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    async def execute(self, sql: str, *args: Any) -> int:
        return await self._q.execute(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self._q.fetch(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        return await self._q.fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._q.fetchval(sql, *args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Queries]:
        async with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            self._in_tx = asyncio.current_task()
            try:
                yield self._q
            except BaseException:
                self._conn.rollback()
                raise
            else:
                self._conn.commit()
            finally:
                self._in_tx = None

    async def close(self) -> None:
        async with self._lock:
            self._conn.close()


def file_of(url: str) -> str:
    """The file a sqlite:// URL names (sqlite:////abs/path.db), or ":memory:"."""
    return url.removeprefix("sqlite://").removeprefix("/") or ":memory:"


def _open_connection(path: str) -> sqlite3.Connection:
    # isolation_level=None: single statements autocommit; transactions BEGIN explicitly.
    # cached_statements: every statement Valet runs stays prepared (about 150 distinct ones,
    # more than the default 128: an LRU over them would prepare some again and again).
    conn = sqlite3.connect(path, detect_types=sqlite3.PARSE_DECLTYPES, isolation_level=None,
                           check_same_thread=False, cached_statements=512)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=5000")
    # What a row held before it changed is zeroed in the page being written anyway (no extra
    # I/O): a sign-in link taken out of the outbox is not left behind in the file.
    conn.execute("PRAGMA secure_delete=FAST")
    return conn
