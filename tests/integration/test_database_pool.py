"""Postgres's pool is sized from the configuration (database.pool_size, VALET_DATABASE_POOL_SIZE,
or the URL's ?pool_size=), and its connections keep prepared statements (asyncpg's cache,
database.statement_cache_size; 0 turns it off for a PgBouncer in transaction mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app.database import open_database
from bot.config import ConfigError, load_settings
from bot.config.sections import DatabaseSettings
from bot.db.postgres import PostgresDatabase


async def _prepared_after_two_runs(db: PostgresDatabase) -> int:
    async with db.transaction() as tx:  # one connection throughout
        for _ in range(2):
            await tx.fetchval("SELECT COUNT(*) FROM users WHERE id = $1", "ana")
        return int(await tx.fetchval("SELECT COUNT(*) FROM pg_prepared_statements"))


async def test_the_pool_is_the_size_the_configuration_says(postgres_dsn: str,
                                                           tmp_path: Path) -> None:
    config = tmp_path / "valet.yaml"
    config.write_text("database:\n  pool_size: 3\n")
    settings = load_settings(str(config), env={"VALET_DATABASE_URL": postgres_dsn})
    db = await open_database(settings.database_url, settings=settings.database)
    try:
        assert isinstance(db, PostgresDatabase) and db.pool_size == 3
        assert await _prepared_after_two_runs(db) >= 1  # kept for the next run
    finally:
        await db.close()


async def test_the_urls_pool_size_wins_and_the_statement_cache_can_be_off(
        postgres_dsn: str) -> None:
    db = await open_database(f"{postgres_dsn}?pool_size=5",
                             settings=DatabaseSettings(pool_size=3, statement_cache_size=0))
    try:
        assert isinstance(db, PostgresDatabase) and db.pool_size == 5
        assert await _prepared_after_two_runs(db) == 0
    finally:
        await db.close()


def test_the_pool_size_from_the_environment_is_checked(tmp_path: Path) -> None:
    env = {"VALET_CONFIG": "/dev/null", "VALET_DATABASE_POOL_SIZE": "40"}
    assert load_settings(None, env=env).database.pool_size == 40
    with pytest.raises(ConfigError) as err:
        load_settings(None, env={**env, "VALET_DATABASE_POOL_SIZE": "0"})
    assert "database.pool_size" in str(err.value)
