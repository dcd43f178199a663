"""Writes that commit together (bot.db.batch): all or none on both backends, one statement on
Postgres."""

from __future__ import annotations

import pytest

from bot.db import Database
from bot.db.batch import Batch, combined
from bot.db.counting import CountingDatabase


async def _notes(db: Database) -> None:
    await db.execute("CREATE TABLE batch_notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")


async def test_a_batch_commits_every_write_together(db: Database) -> None:
    await _notes(db)
    counted = CountingDatabase(db)
    batch = Batch()
    await batch.execute("INSERT INTO batch_notes (id, body) VALUES ($1, $2)", 1, "one")
    assert await batch.fetchval("INSERT INTO batch_notes (id, body) VALUES ($1, $2)"
                                " RETURNING id", 2, "two") is None  # not known before it runs
    await batch.execute("UPDATE batch_notes SET body = $2 WHERE id = $1", 3, "none such")
    assert await db.fetchval("SELECT COUNT(*) FROM batch_notes") == 0  # nothing runs yet
    await batch.run(counted)
    rows = await db.fetch("SELECT id, body FROM batch_notes ORDER BY id")
    assert rows == [{"id": 1, "body": "one"}, {"id": 2, "body": "two"}]
    sent = [s.sql for s in counted.log.statements]
    assert sent == (["3 writes in one statement"] if db.dialect == "postgres" else
                    ["BEGIN", "INSERT batch_notes", "INSERT batch_notes", "UPDATE batch_notes",
                     "COMMIT"])


async def test_a_batch_with_a_failing_write_changes_nothing(db: Database) -> None:
    await _notes(db)
    await db.execute("INSERT INTO batch_notes (id, body) VALUES (1, 'kept')")
    batch = Batch()
    await batch.execute("UPDATE batch_notes SET body = $1 WHERE id = 1", "changed")
    await batch.execute("INSERT INTO batch_notes (id, body) VALUES ($1, $2)", 2, "new")
    await batch.execute("INSERT INTO batch_notes (id, body) VALUES ($1, $2)", 1, "clash")
    with pytest.raises(Exception):  # noqa: B017  (each driver raises its own error)
        await batch.run(db)
    assert await db.fetch("SELECT id, body FROM batch_notes") == [{"id": 1, "body": "kept"}]


async def test_a_literal_holding_a_dollar_runs_in_a_transaction(db: Database) -> None:
    if db.dialect != "postgres":
        pytest.skip("not applicable: SQLite's own $n translation does not read literals either")
    await _notes(db)
    counted = CountingDatabase(db)
    batch = Batch()
    await batch.execute("INSERT INTO batch_notes (id, body) VALUES ($1, 'costs $2')", 1)
    await batch.execute("INSERT INTO batch_notes (id, body) VALUES ($1, $2)", 2, "two")
    await batch.run(counted)
    assert await db.fetchval("SELECT body FROM batch_notes WHERE id = 1") == "costs $2"
    assert counted.log.statements[0].sql == "BEGIN"


async def test_a_batch_only_writes() -> None:
    with pytest.raises(TypeError):
        await Batch().fetch("SELECT 1")
    with pytest.raises(TypeError):
        await Batch().fetchrow("SELECT 1")


def test_the_combined_statement_numbers_each_statements_parameters_after_the_last() -> None:
    sql, args = combined([("INSERT INTO a (x, y) VALUES ($1, $2)", (1, 2)),
                          ("DELETE FROM b WHERE z = $1", (3,)),
                          ("UPDATE c SET x = $2 WHERE id = $1", (4, 5))])
    assert sql == ("WITH w0 AS (INSERT INTO a (x, y) VALUES ($1, $2)), "
                   "w1 AS (DELETE FROM b WHERE z = $3) UPDATE c SET x = $5 WHERE id = $4")
    assert args == [1, 2, 3, 4, 5]
