"""What a turn reads once, and what it knows is not there (bot.db.turn_reads), on both
backends: fewer statements, never a stale or missing answer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from agents.tools.plan_store import HOLDING as PLAN
from agents.tools.plan_store import PlanStep, PlanStore
from bot.approvals.store import HOLDING as APPROVALS
from bot.approvals.store import ApprovalStore
from bot.contracts.clock import FakeClock
from bot.db import Database
from bot.db.counting import CountingDatabase
from bot.db.turn_reads import turn_scope
from bot.llm.port import LLMResponse, TokenUsage, ToolCall
from bot.loop.journal import TurnJournal
from bot.people.users import UserStore
from bot.tasks.pool import HOLDING as TASKS
from bot.tasks.pool import AgentPool

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _counted(db: Database) -> tuple[CountingDatabase, UserStore]:
    counted = CountingDatabase(db)
    return counted, UserStore(counted, holdings=(APPROVALS, TASKS, PLAN))


async def test_a_turn_reads_the_person_once_and_again_after_a_change(db: Database) -> None:
    counted, users = _counted(db)
    await users.ensure("ana", timezone="UTC", at=T0)
    counted.log.clear()
    with turn_scope("inbox-1", first_run=True):
        assert (await users.get("ana")).timezone == "UTC"  # type: ignore[union-attr]
        assert (await users.get("ana")).timezone == "UTC"  # type: ignore[union-attr]
        assert len(counted.log) == 1
        await users.set_timezone("ana", "Europe/Lisbon")
        assert (await users.get("ana")).timezone == "Europe/Lisbon"  # type: ignore[union-attr]
    assert [s.sql for s in counted.log.statements] == ["SELECT users", "UPDATE users",
                                                      "SELECT users"]
    counted.log.clear()
    await users.get("ana")
    await users.get("ana")
    assert len(counted.log) == 2  # outside a turn every read goes to the database


async def test_stores_holding_nothing_for_the_person_are_not_read(db: Database) -> None:
    counted, users = _counted(db)
    await users.ensure("ana", at=T0)
    approvals, pool = ApprovalStore(counted), AgentPool(counted, FakeClock(T0))
    plans = PlanStore(counted)
    with turn_scope("inbox-1", first_run=True):
        await users.get("ana")
        counted.log.clear()
        assert await approvals.pending("ana", T0) == []
        assert await approvals.unreported("ana") == []
        assert await approvals.expire_due(T0, "ana") == []
        assert await pool.waiting("ana") == [] and await pool.sweep("ana") == []
        assert await plans.get("ana") == []
        assert len(counted.log) == 0
        # What the turn adds is read back within it.
        await plans.set("ana", [PlanStep(step="pack")], T0)
        await approvals.create(user_id="ana", call_id="c1", tool_name="send_mail",
                               arguments={"to": "ben"}, summary="Mail Ben", at=T0)
        assert [s.step for s in await plans.get("ana")] == ["pack"]
        assert [a.summary for a in await approvals.pending("ana", T0)] == ["Mail Ben"]


async def test_what_a_person_holds_is_read_when_the_turn_starts(db: Database) -> None:
    counted, users = _counted(db)
    await users.ensure("ana", at=T0)
    await PlanStore(db).set("ana", [PlanStep(step="pack")], T0)
    with turn_scope("inbox-1", first_run=True):
        await users.get("ana")
        counted.log.clear()
        assert [s.step for s in await PlanStore(counted).get("ana")] == ["pack"]
        assert await ApprovalStore(counted).pending("ana", T0) == []
        assert [s.sql for s in counted.log.statements] == ["SELECT plans"]


async def test_a_task_that_outlives_its_turn_reads_the_database(db: Database) -> None:
    counted, users = _counted(db)
    await users.ensure("ana", at=T0)
    later = asyncio.Event()

    async def extraction() -> None:  # started in the turn, runs after it
        await later.wait()
        await users.get("ana")

    with turn_scope("inbox-1", first_run=True):
        await users.get("ana")
        task = asyncio.create_task(extraction())
    counted.log.clear()
    later.set()
    await task
    assert len(counted.log) == 1


async def test_a_first_run_reads_no_journal_until_it_writes_one(db: Database) -> None:
    counted = CountingDatabase(db)
    journal = TurnJournal(counted, FakeClock(T0))
    answer = LLMResponse(None, [ToolCall("c1", "weather", "{}")], TokenUsage(1, 1),
                         "tool_calls")
    with turn_scope("inbox-7", first_run=True):
        assert (await journal.load("inbox-7")).empty
        assert await journal.recorded("inbox-7", "tasks:done") is None
        await journal.finish("inbox-7")
        assert len(counted.log) == 0
        await journal.llm_response("inbox-7", 1, answer)
        assert (await journal.load("inbox-7")).response(1) == (answer, 0)
    with turn_scope("inbox-7", first_run=False):  # a redo reads what the first run wrote
        assert (await journal.load("inbox-7")).response(1) == (answer, 0)
        await journal.finish("inbox-7")
    assert (await journal.load("inbox-7")).empty
