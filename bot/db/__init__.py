"""The database: `connect` opens the one a URL names and applies (or checks) migrations; the
port itself (bot.db.port: a handful of methods over SQL that SQLite and Postgres both run) is
re-exported here.

SQL is written once, with `$1, $2...` placeholders (Postgres style); the SQLite implementation
translates them. Times are timezone-aware datetimes in UTC on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from bot.config.urls import database_url_problem
from bot.db.port import Database, DatabaseUnavailable, DatabaseURLError, Queries, Row
from bot.text.redact import redact_text, redact_url

# The port is this package's face: `from bot.db import Database` wherever a database is used.
__all__ = ["Database", "DatabaseURLError", "DatabaseUnavailable", "Queries", "Row",
           "as_unavailable", "connect"]


async def connect(url: str, *, migrate: bool | Literal["check"] = True,
                  migrations: Sequence[str] = ("bot.db",), pool_size: int | None = None,
                  statement_cache_size: int | None = None) -> Database:
    """Open the database a URL names (sqlite:///path, sqlite:///:memory:, postgresql://...).

    `migrations`: the packages whose migrations apply (bot.app.database names them all).
    `pool_size`, `statement_cache_size`: Postgres's connections and prepared statements per
    connection (the configuration's `database:`; the URL's own parameters win).
    `migrate`: True applies the migrations not applied yet; "check" only checks that none is
    missing (SchemaBehind: run `valet migrate`); False neither. Except with False, a schema
    newer than the code is refused (SchemaAhead).

    Raises DatabaseURLError for a URL of the wrong form and DatabaseUnavailable when the
    database is there on paper but cannot be reached, opened or written."""
    problem = database_url_problem(url)
    if problem:
        raise DatabaseURLError(f"database URL: {problem}")
    try:
        db = await _open(url, pool_size, statement_cache_size)
    except DatabaseUnavailable:
        raise
    except OSError as err:  # refused, unreachable, no such directory, read-only...
        raise DatabaseUnavailable(_unavailable(url, err)) from err
    except Exception as err:
        if not _is_database_failure(err):
            raise
        raise DatabaseUnavailable(_unavailable(url, err)) from err
    if migrate:
        from bot.db.migrate import apply_migrations, refuse_behind, refuse_newer, schema_state

        try:
            state = await schema_state(db, migrations)
            refuse_newer(state, redact_url(url), migrations)
            if migrate == "check":
                refuse_behind(state, redact_url(url))
            else:
                await apply_migrations(db, migrations)
        except Exception as err:
            await db.close()
            if not _is_database_failure(err):
                raise
            raise DatabaseUnavailable(_unavailable(url, err, step="prepare")) from err
    return db


async def _open(url: str, pool_size: int | None, statement_cache_size: int | None
                ) -> Database:
    if url.startswith("sqlite:"):
        from bot.db.sqlite import SQLiteDatabase

        return await SQLiteDatabase.open(url)
    from bot.db.postgres import PostgresDatabase

    return await PostgresDatabase.open(url, pool_size=pool_size,
                                       statement_cache_size=statement_cache_size)


def as_unavailable(err: BaseException, url: str) -> DatabaseUnavailable | None:
    """A driver error met while running (disk full, server gone) as one plain line; None
    when the error is not the database's."""
    if isinstance(err, DatabaseUnavailable):
        return err
    if _is_database_failure(err):
        return DatabaseUnavailable(_unavailable(url, err, step="use"))
    return None


def _is_database_failure(err: BaseException) -> bool:
    """An error of the database itself (driver-level), as opposed to a bug of ours."""
    import sqlite3

    import asyncpg

    return isinstance(err, sqlite3.OperationalError | asyncpg.PostgresError
                      | asyncpg.InterfaceError)


def _unavailable(url: str, err: BaseException, *, step: str = "open") -> str:
    where = redact_url(url)
    reason = str(err).strip() or type(err).__name__
    if url.startswith("sqlite:"):
        hint = ("check that the directory exists and is writable by this user and that the "
                "disk is not full")
    else:
        hint = ("check that the Postgres server is running and reachable, and the user, "
                "password and database name in VALET_DATABASE_URL")
    return f"cannot {step} the database {where}: {redact_text(reason)}; {hint}"
