"""The database port: `Database` (and `Queries`, what a transaction offers), rows as dicts,
and the errors every implementation raises. `bot.db` re-exports them with `connect`.

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


class DatabaseUnavailable(Exception):
    """The database cannot be opened or written: said in one line, with what to check."""


class DatabaseURLError(ValueError):
    """The database URL is not one Valet can use."""
