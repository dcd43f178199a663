"""The Database port: a handful of methods over SQL that both SQLite and Postgres run.

SQL is written once, with `$1, $2...` placeholders (Postgres style); the SQLite implementation
translates them. Times are timezone-aware datetimes in UTC on both.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

Row = dict[str, Any]


class Queries(Protocol):
    async def execute(self, sql: str, *args: Any) -> int:
        """Run a statement; returns the number of rows it changed."""
        ...

    async def fetch(self, sql: str, *args: Any) -> list[Row]: ...

    async def fetchrow(self, sql: str, *args: Any) -> Row | None: ...

    async def fetchval(self, sql: str, *args: Any) -> Any: ...


class Database(Queries, Protocol):
    dialect: str  # "sqlite" or "postgres"

    def transaction(self) -> AbstractAsyncContextManager[Queries]:
        """All statements on the yielded object commit together or not at all."""
        ...

    async def close(self) -> None: ...


async def connect(url: str, *, migrate: bool = True) -> Database:
    """Open the database a URL names (sqlite:///path, sqlite:///:memory:, postgresql://...)."""
    if url.startswith("sqlite:"):
        from bot.db.sqlite import SQLiteDatabase

        db: Database = await SQLiteDatabase.open(url)
    elif url.startswith(("postgres://", "postgresql://")):
        from bot.db.postgres import PostgresDatabase

        db = await PostgresDatabase.open(url)
    else:
        raise ValueError(f"unsupported database URL {redact_url(url)!r} "
                         "(use sqlite:///path/to/file.db or postgresql://...)")
    if migrate:
        from bot.db.migrate import apply_migrations

        await apply_migrations(db)
    return db


def redact_url(url: str) -> str:
    """A URL fit for logs: the password replaced."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else url
