"""Storage fixtures: every test that takes `db` (or `db_url`) runs once on SQLite and once on
Postgres (a fresh database on the throwaway server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app.database import open_database
from bot.db import Database


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database; Postgres is only started for the postgres param."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/t.db"
    return str(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    """A migrated database, closed after the test."""
    database = await open_database(db_url)
    try:
        yield database
    finally:
        await database.close()
