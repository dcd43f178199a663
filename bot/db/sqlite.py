"""SQLite behind the Database port: one file, WAL, one connection owned by one worker thread.

Every statement runs on that thread, so the connection is never used from two threads; an
asyncio lock keeps a transaction's statements together while other coroutines wait.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.db import Row

_PLACEHOLDER = re.compile(r"\$(\d+)")
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f+00:00"


def _adapt_datetime(value: datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("naive datetime given to the database; use timezone-aware UTC times")
    return value.astimezone(UTC).strftime(_TIME_FORMAT)


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

    def __init__(self, conn: sqlite3.Connection, executor: ThreadPoolExecutor) -> None:
        self._conn = conn
        self._executor = executor
        self._lock = asyncio.Lock()
        self._in_tx: asyncio.Task[Any] | None = None
        self._sql_cache: dict[str, str] = {}
        self._q = _Queries(self)

    @classmethod
    async def open(cls, url: str) -> SQLiteDatabase:
        path = url.removeprefix("sqlite://").removeprefix("/") or ":memory:"
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        loop = asyncio.get_running_loop()
        conn = await loop.run_in_executor(executor, _open_connection, path)
        return cls(conn, executor)

    # Outside a transaction each statement takes the lock on its own; inside one, the
    # transaction's task already holds it.
    async def _run(self, fn: Any, sql: str, args: tuple[Any, ...]) -> Any:
        loop = asyncio.get_running_loop()
        translated = self._translate(sql)
        if self._in_tx is not None and self._in_tx is asyncio.current_task():
            return await loop.run_in_executor(self._executor, fn, translated, args)
        async with self._lock:
            return await loop.run_in_executor(self._executor, fn, translated, args)

    def _translate(self, sql: str) -> str:
        cached = self._sql_cache.get(sql)
        if cached is None:
            cached = self._sql_cache[sql] = _PLACEHOLDER.sub(r"?\1", sql)
        return cached

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
        loop = asyncio.get_running_loop()
        async with self._lock:
            await loop.run_in_executor(self._executor, self._conn.execute, "BEGIN IMMEDIATE")
            self._in_tx = asyncio.current_task()
            try:
                yield self._q
            except BaseException:
                await asyncio.shield(loop.run_in_executor(self._executor, self._conn.rollback))
                raise
            else:
                await loop.run_in_executor(self._executor, self._conn.commit)
            finally:
                self._in_tx = None

    async def executescript(self, script: str) -> None:
        loop = asyncio.get_running_loop()
        async with self._lock:
            await loop.run_in_executor(self._executor, self._conn.executescript, script)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        async with self._lock:
            await loop.run_in_executor(self._executor, self._conn.close)
        self._executor.shutdown(wait=True)


def _open_connection(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, detect_types=sqlite3.PARSE_DECLTYPES, isolation_level=None,
                           check_same_thread=False)
    # isolation_level=None: we issue BEGIN ourselves; single statements autocommit.
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=10000")
    return conn
