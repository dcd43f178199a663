"""A database whose server was not there at start (bot.db.pending): every statement says
"unavailable" (what the spool and the outage log recognise) until `reach()` has opened it,
trying again with a growing wait, one WARNING a minute; a mistake that is not a server away
(a wrong password) is raised at once, never waited for."""

from __future__ import annotations

import logging

import pytest

from bot.app.database import open_database, pending
from bot.db import Database, DatabaseUnavailable, connect
from bot.db.pending import PendingDatabase, server_not_there
from bot.plumbing.outages import OutageLog, OutageState
from tests.ports import free_port


def dead_url() -> str:
    port = free_port()  # a port nothing listens on
    return f"postgresql://valet:pw@127.0.0.1:{port}/valet"


async def test_a_server_away_at_start_is_a_pending_database_for_serve_only():
    url = dead_url()
    with pytest.raises(DatabaseUnavailable):
        await open_database(url)  # every other command: one line, as before
    db = await open_database(url, wait=True)
    assert isinstance(db, PendingDatabase) and pending(db) is db and db.dialect == "postgres"
    with pytest.raises(DatabaseUnavailable) as err:
        await db.fetchval("SELECT 1")
    assert "cannot open the database" in str(err.value)
    with pytest.raises(DatabaseUnavailable):
        async with db.transaction():
            pass
    assert "not reached since start-up" in (db.waiting_for() or "")
    await db.close()


async def test_it_is_tried_again_with_a_growing_wait_then_is_the_database(caplog):
    url = dead_url()
    tries: list[str] = []

    async def opened() -> Database:
        tries.append("try")
        if len(tries) < 4:
            return await connect(url)  # still away: a real refused connection
        return await connect("sqlite:///:memory:")

    with pytest.raises(DatabaseUnavailable) as first:
        await connect(url)
    db = PendingDatabase(opened, dialect="postgres", first_error=first.value,
                         first_wait_seconds=0.01, max_wait_seconds=0.04)
    handler_filter = OutageLog(OutageState())
    caplog.handler.addFilter(handler_filter)
    caplog.set_level(logging.INFO, logger="bot.db.pending")
    reached = await db.reach()
    assert len(tries) == 4 and db.attempts == 5 and db.reached and pending(db) is None
    assert await db.fetchval("SELECT 1") == 1 and await reached.fetchval("SELECT 2") == 2
    assert db.waiting_for() is None
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # once a minute
    assert "database unreachable" in warnings[0].getMessage()
    await db.close()


def test_only_a_server_away_is_waited_for():
    import asyncpg

    away = DatabaseUnavailable("cannot open")
    away.__cause__ = ConnectionRefusedError(111, "Connect call failed")
    assert server_not_there(away)
    starting = DatabaseUnavailable("cannot open")
    starting.__cause__ = asyncpg.CannotConnectNowError("the database system is starting up")
    assert server_not_there(starting)
    password = DatabaseUnavailable("cannot open")
    password.__cause__ = asyncpg.InvalidPasswordError("password authentication failed")
    assert not server_not_there(password)
    missing = DatabaseUnavailable("cannot open")
    missing.__cause__ = asyncpg.InvalidCatalogNameError('database "valet" does not exist')
    assert not server_not_there(missing)


async def test_a_mistake_found_once_the_server_answers_is_raised_not_waited_for():
    import asyncpg

    async def opened() -> Database:
        refused = DatabaseUnavailable("cannot open the database: password authentication failed")
        raise refused from asyncpg.InvalidPasswordError("password authentication failed")

    with pytest.raises(DatabaseUnavailable) as first:
        await connect(dead_url())
    db = PendingDatabase(opened, dialect="postgres", first_error=first.value,
                         first_wait_seconds=0.01)
    with pytest.raises(DatabaseUnavailable, match="password authentication failed"):
        await db.reach()
    assert db.attempts == 2 and not db.reached
