"""The database with every part's migrations: the core's, and those of the parts that keep
tables of their own (the channels that have some: channels.registry; the trigger side, the
agents). Every command that opens the database opens it here."""

from __future__ import annotations

from typing import Literal

from bot.config.sections import DatabaseSettings
from bot.db import Database, connect
from channels.registry import MIGRATIONS as CHANNELS

# Packages with a `migrations` folder (one numbering for all); a migration in parts is applied
# in this order: the core's tables before those that refer to them.
MIGRATIONS = ("bot.db", *CHANNELS, "triggers", "agents")


async def open_database(url: str, *, migrate: bool | Literal["check"] = True,
                        settings: DatabaseSettings | None = None) -> Database:
    """`migrate`: True applies what is pending, "check" refuses an old schema (bot.db.connect).
    `settings`: the pool's size and prepared statements (the configuration's `database:`)."""
    settings = settings or DatabaseSettings()
    return await connect(url, migrate=migrate, migrations=MIGRATIONS,
                         pool_size=settings.pool_size,
                         statement_cache_size=settings.statement_cache_size)
