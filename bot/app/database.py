"""The database with every part's migrations: the core's, and those of the parts that keep
tables of their own (the channels that have some: channels.registry; the trigger side, the
agents). Every command that opens the database opens it here."""

from __future__ import annotations

from typing import Literal

from bot.config.sections import DatabaseSettings
from bot.db import Database, DatabaseUnavailable, connect
from bot.db.pending import PendingDatabase, server_not_there
from channels.registry import MIGRATIONS as CHANNELS

# Packages with a `migrations` folder (one numbering for all); a migration in parts is applied
# in this order: the core's tables before those that refer to them.
MIGRATIONS = ("bot.db", *CHANNELS, "triggers", "agents")


async def open_database(url: str, *, migrate: bool | Literal["check"] = True,
                        settings: DatabaseSettings | None = None,
                        wait: bool = False) -> Database:
    """`migrate`: True applies what is pending, "check" refuses an old schema (bot.db.connect).
    `settings`: the pool's size and prepared statements (the configuration's `database:`).
    `wait` (`valet serve`): a Postgres server that is not there yet gives a PendingDatabase
    (bot.db.pending), which its `reach()` opens once the server is back; anything else wrong
    is raised as without it."""
    settings = settings or DatabaseSettings()

    async def opened() -> Database:
        return await connect(url, migrate=migrate, migrations=MIGRATIONS,
                             pool_size=settings.pool_size,
                             statement_cache_size=settings.statement_cache_size)

    try:
        return await opened()
    except DatabaseUnavailable as err:
        if not wait or url.startswith("sqlite:") or not server_not_there(err):
            raise
        return PendingDatabase(opened, dialect="postgres", first_error=err)


def pending(db: Database) -> PendingDatabase | None:
    """The database not reached yet (`valet serve` started while its server was away)."""
    return db if isinstance(db, PendingDatabase) and not db.reached else None
