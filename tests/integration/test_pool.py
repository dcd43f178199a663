"""AgentPool and the agents' stores on SQLite and Postgres: the same SQL on both."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.note_store import NoteStore
from agents.reminder_store import ReminderStore
from agents.tools.plan_store import PlanStep, PlanStore
from bot.contracts.clock import FakeClock
from bot.contracts.pause import PausedTask
from bot.people.users import UserStore
from bot.tasks.pool import AgentPool

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def task(name: str, question: str, **kw) -> PausedTask:
    return PausedTask(kind="agent", name=name, status="WAITING_FOR_INPUT", question=question,
                      label=name, schema_version="v1", fields={"a": 1}, state={"asking": "b"},
                      **kw)


async def users(db, *ids: str) -> None:
    for user_id in ids:
        await UserStore(db).ensure(user_id, at=NOW)


async def test_tasks_are_stored_per_user_latest_question_first(db):
    await users(db, "ann", "bob")
    clock = FakeClock(NOW)
    pool = AgentPool(db, clock)
    await pool.pause("ann", [task("first", "Q1?"), task("second", "Q2?")], turn_id="t1")
    await pool.pause("ann", [task("third", "Q3?")], turn_id="t2")
    await pool.pause("bob", [task("bobs", "Qb?")])
    waiting = await pool.waiting("ann")
    # Same clock reading for all: the order still follows the turns, then the call order.
    assert [t.question for t in waiting] == ["Q3?", "Q1?", "Q2?"]
    assert waiting[1].fields == {"a": 1} and waiting[1].state == {"asking": "b"}
    assert waiting[1].expires_at == NOW + timedelta(hours=24)
    assert [t.question for t in await pool.waiting("bob")] == ["Qb?"]
    assert await pool.get("bob", waiting[0].id) is None  # another user's task is not found

    # Asking again makes a task the latest question and restarts its TTL.
    clock.advance(hours=2)
    waiting[2].question = "Q2 again?"
    await pool.touch(waiting[2])
    again = await pool.waiting("ann")
    assert [t.question for t in again] == ["Q2 again?", "Q3?", "Q1?"]
    assert again[0].expires_at == NOW + timedelta(hours=26)


async def test_a_task_is_taken_once(db):
    await users(db, "ann")
    pool = AgentPool(db, FakeClock(NOW))
    await pool.pause("ann", [task("x", "Q?")])
    [found] = await pool.waiting("ann")
    assert await pool.take(found) is True
    assert await pool.take(found) is False
    await pool.put_back(found)
    assert [t.id for t in await pool.waiting("ann")] == [found.id]
    assert (await pool.cancel("ann", found.id)).question == "Q?"
    assert await pool.cancel("ann", found.id) is None


async def test_expired_tasks_are_swept_with_notices(db):
    await users(db, "ann", "bob")
    clock = FakeClock(NOW)
    pool = AgentPool(db, clock, ttl=timedelta(minutes=30))
    await pool.pause("ann", [task("x", "Q?")])
    await pool.pause("bob", [task("y", "Qb?")])
    clock.advance(minutes=31)
    assert await pool.waiting("ann") == []  # expired tasks are never resumed
    [notice] = await pool.sweep("ann")
    assert (notice.user_id, notice.reason, notice.task.question) == ("ann", "expired", "Q?")
    assert await pool.sweep("ann") == []
    everyone = await pool.sweep()  # for a proactive sweep (the trigger engine, later)
    assert [(n.user_id, n.task.question) for n in everyone] == [("bob", "Qb?")]


async def test_limits_drop_the_oldest_and_say_so(db):
    await users(db, "ann")
    pool = AgentPool(db, FakeClock(NOW), max_per_user=3)
    await pool.pause("ann", [task("note", "N1?"), task("mail", "M1?")])
    notices = await pool.pause("ann", [task("note", "N2?")], limit_for=lambda n: 1)
    assert [(n.reason, n.task.question, n.detail) for n in notices] == [("evicted", "N1?", "1")]
    notices = await pool.pause("ann", [task("mail", "M2?"), task("todo", "T1?")])
    assert [n.task.question for n in notices] == ["M1?"]
    assert [t.question for t in await pool.waiting("ann")] == ["M2?", "T1?", "N2?"]


async def test_notes_reminders_and_plans(db):
    await users(db, "ann", "bob")
    notes = NoteStore(db)
    await notes.add("ann", "Wifi", "password is 50%_off\\now", NOW)
    await notes.add("ann", "Shopping", "Milk and EGGS", NOW)
    await notes.add("bob", "Eggs", "bob's eggs", NOW)
    assert [n.title for n in await notes.search("ann", "eggs milk")] == ["Shopping"]
    assert [n.title for n in await notes.search("ann", "50%_")] == ["Wifi"]
    assert [n.title for n in await notes.search("ann", "\\now")] == ["Wifi"]
    assert await notes.search("ann", "k%s") == []  # LIKE wildcards are searched literally
    assert [n.title for n in await notes.recent("ann")] == ["Shopping", "Wifi"]

    reminders = ReminderStore(db)
    due = datetime(2026, 1, 6, 15, tzinfo=UTC)
    saved = await reminders.add("ann", "call mom", due, "Europe/Paris", status="pending",
                                source_text="remind me", at=NOW)
    [found] = await reminders.upcoming("ann")
    assert (found.id, found.text, found.due_at, found.status) == (saved.id, "call mom", due,
                                                                  "pending")

    plans = PlanStore(db)
    await plans.set("ann", [PlanStep(step="a", status="completed"), PlanStep(step="b")], NOW)
    await plans.set("ann", [PlanStep(step="a", status="completed"),
                            PlanStep(step="b", status="in_progress")], NOW)
    assert "2. [in progress] b" in await plans.context_note("ann")
    await plans.set("ann", [], NOW)
    assert await plans.get("ann") == [] and await plans.context_note("ann") is None
