"""TaskStore: the database is the truth about tasks and their runs.

A run is inserted under its unique (task, run key) before anything is done for it; whoever
inserts it (one process, one fire) does the work, every other fire finds it there and stops.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from bot.db import Database, Queries, Row
from triggers.model import (
    ConditionCheck,
    EventFilter,
    Misfire,
    RunOutcome,
    Task,
    TaskStatus,
    TriggerKind,
)

_COLUMNS = ("id", "user_id", "name", "kind", "cron", "timezone", "interval_seconds", "run_at",
            "event_filter", "condition", "executor", "action", "channel", "status",
            "resume_status", "misfire", "grace_seconds", "quiet_when_nothing", "template",
            "next_run_at", "last_run_at", "last_value", "last_held", "last_fired_at",
            "created_from", "created_at", "updated_at", "origin_channel")


def _task(row: Row) -> Task:
    return Task(
        id=row["id"], user_id=row["user_id"], name=row["name"], kind=TriggerKind(row["kind"]),
        timezone=row["timezone"], status=TaskStatus(row["status"]),
        misfire=Misfire(row["misfire"]), grace_seconds=int(row["grace_seconds"]),
        executor=row["executor"], action=json.loads(row["action"] or "{}"),
        channel=row["channel"], origin_channel=row["origin_channel"], cron=row["cron"],
        interval_seconds=row["interval_seconds"],
        run_at=row["run_at"],
        event_filter=EventFilter.from_json(json.loads(row["event_filter"]))
        if row["event_filter"] else None,
        condition=ConditionCheck.from_json(json.loads(row["condition"]))
        if row["condition"] else None,
        quiet_when_nothing=bool(row["quiet_when_nothing"]), template=row["template"],
        next_run_at=row["next_run_at"], last_run_at=row["last_run_at"],
        last_value=json.loads(row["last_value"]) if row["last_value"] else None,
        last_held=bool(row["last_held"]), last_fired_at=row["last_fired_at"],
        created_from=row["created_from"], created_at=row["created_at"],
        resume_status=TaskStatus(row["resume_status"]) if row["resume_status"] else None)


def new_task_id() -> str:
    return "t" + secrets.token_hex(3)


class TaskStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, task: Task, at: datetime) -> Task:
        """Store a new task with its first run time computed from `at`."""
        task = replace(task, created_at=task.created_at or at,
                       next_run_at=task.next_run_at or replace(task, created_at=task.created_at
                                                               or at).next_after(at))
        values: dict[str, Any] = {
            "id": task.id, "user_id": task.user_id, "name": task.name, "kind": task.kind.value,
            "cron": task.cron, "timezone": task.timezone,
            "interval_seconds": task.interval_seconds, "run_at": task.run_at,
            "event_filter": json.dumps(task.event_filter.to_json())
            if task.event_filter else None,
            "condition": json.dumps(task.condition.to_json()) if task.condition else None,
            "executor": task.executor, "action": json.dumps(task.action),
            "channel": task.channel, "status": task.status.value, "resume_status": None,
            "misfire": task.misfire.value, "grace_seconds": task.grace_seconds,
            "quiet_when_nothing": int(task.quiet_when_nothing), "template": task.template,
            "next_run_at": task.next_run_at, "last_run_at": None, "last_value": None,
            "last_held": 0, "last_fired_at": None, "created_from": task.created_from,
            "created_at": task.created_at, "updated_at": at,
            "origin_channel": task.origin_channel}
        marks = ", ".join(f"${i}" for i in range(1, len(_COLUMNS) + 1))
        await self.db.execute(f"INSERT INTO trigger_tasks ({', '.join(_COLUMNS)})"
                              f" VALUES ({marks})", *[values[c] for c in _COLUMNS])
        return task

    async def get(self, task_id: str) -> Task | None:
        row = await self.db.fetchrow("SELECT * FROM trigger_tasks WHERE id = $1", task_id)
        return _task(row) if row else None

    async def of_user(self, user_id: str, *, include_finished: bool = False) -> list[Task]:
        rows = await self.db.fetch(
            "SELECT * FROM trigger_tasks WHERE user_id = $1 ORDER BY created_at, id", user_id)
        tasks = [_task(r) for r in rows]
        if include_finished:
            return tasks
        return [t for t in tasks if t.status not in (TaskStatus.COMPLETED, TaskStatus.EXPIRED)]

    async def all(self) -> list[Task]:
        return [_task(r) for r in await self.db.fetch(
            "SELECT * FROM trigger_tasks ORDER BY user_id, created_at, id")]

    async def due(self, now: datetime, limit: int = 500) -> list[Task]:
        """Active scheduled tasks (and conditions to poll) whose next run has come."""
        rows = await self.db.fetch(
            "SELECT * FROM trigger_tasks WHERE status = 'active' AND next_run_at IS NOT NULL"
            " AND next_run_at <= $1 ORDER BY next_run_at LIMIT $2", now, limit)
        return [_task(r) for r in rows]

    async def next_due_at(self) -> datetime | None:
        # ORDER BY, not MIN(): SQLite gives an aggregate back as text, a column as a time.
        return await self.db.fetchval(
            "SELECT next_run_at FROM trigger_tasks WHERE status = 'active'"
            " AND next_run_at IS NOT NULL ORDER BY next_run_at LIMIT 1")

    async def listening(self) -> list[Task]:
        """Active event tasks."""
        rows = await self.db.fetch(
            "SELECT * FROM trigger_tasks WHERE status = 'active' AND kind = 'event'")
        return [_task(r) for r in rows]

    # --- event windows (triggers/event_windows.py) -----------------------------------------

    async def open_window(self, task_id: str, now: datetime, window: timedelta) -> bool:
        """Start the task's window now if none is open (a compare-and-set: of two events at
        once, one opens it); False while one is."""
        return await self.db.execute(
            "UPDATE trigger_tasks SET last_fired_at = $2 WHERE id = $1"
            " AND (last_fired_at IS NULL OR last_fired_at <= $3)",
            task_id, now, now - window) > 0

    async def window_ends(self, task_id: str, window: timedelta) -> None:
        """Held events wait for the window's end: the task is due then."""
        task = await self.get(task_id)
        if task is None or task.last_fired_at is None:
            return
        await self.db.execute(
            "UPDATE trigger_tasks SET next_run_at = $2 WHERE id = $1 AND next_run_at IS NULL",
            task_id, task.last_fired_at + window)

    async def window_closed(self, task_id: str, now: datetime, q: Queries | None = None
                            ) -> None:
        """Its held events went to a run: a new window opens now, and nothing is due."""
        await (q or self.db).execute(
            "UPDATE trigger_tasks SET next_run_at = NULL, last_fired_at = $2 WHERE id = $1",
            task_id, now)

    async def held_run_key(self, task_id: str, event_id: str) -> str | None:
        """The run an event already went to (a redelivered event goes to the same one)."""
        return await self.db.fetchval(
            "SELECT run_key FROM trigger_events_held WHERE task_id = $1 AND event_id = $2",
            task_id, event_id)

    async def with_status(self, status: TaskStatus) -> list[Task]:
        rows = await self.db.fetch("SELECT * FROM trigger_tasks WHERE status = $1",
                                   status.value)
        return [_task(r) for r in rows]

    async def advance(self, task: Task, next_run_at: datetime | None, at: datetime,
                      *, ran: bool, q: Queries | None = None) -> bool:
        """Move the task's next run on, only if no one else did (compare-and-set)."""
        status = task.status
        if next_run_at is None and not task.is_recurring():
            status = TaskStatus.COMPLETED
        return await (q or self.db).execute(
            "UPDATE trigger_tasks SET next_run_at = $2, status = $3, updated_at = $4,"
            " last_run_at = CASE WHEN $5 = 1 THEN $4 ELSE last_run_at END"
            " WHERE id = $1 AND next_run_at = $6",
            task.id, next_run_at, status.value, at, int(ran), task.next_run_at) == 1

    async def update(self, task_id: str, at: datetime, **changes: Any) -> None:
        """Change columns (only the ones named in _COLUMNS)."""
        unknown = set(changes) - set(_COLUMNS)
        assert not unknown, unknown
        sets = ", ".join(f"{name} = ${i}" for i, name in enumerate(changes, 3))
        await self.db.execute(f"UPDATE trigger_tasks SET updated_at = $2, {sets} WHERE id = $1",
                              task_id, at, *[_column_value(v) for v in changes.values()])

    async def set_status(self, task_id: str, status: TaskStatus, at: datetime, *,
                         expect: TaskStatus | None = None,
                         resume: TaskStatus | None = None) -> bool:
        return await self.db.execute(
            "UPDATE trigger_tasks SET status = $2, updated_at = $3, resume_status = $4"
            " WHERE id = $1 AND ($5 = '' OR status = $5)", task_id, status.value, at,
            resume.value if resume else None, expect.value if expect else "") == 1

    async def remove(self, task_id: str) -> bool:
        async with self.db.transaction() as tx:
            await tx.execute("DELETE FROM trigger_runs WHERE task_id = $1", task_id)
            return await tx.execute("DELETE FROM trigger_tasks WHERE id = $1", task_id) == 1

    # --- runs ----------------------------------------------------------------------------

    async def claim_run(self, task_id: str, run_key: str, scheduled_at: datetime,
                        outcome: RunOutcome | str, at: datetime, q: Queries | None = None
                        ) -> bool:
        """Record a run; False when this (task, run key) was recorded before: do nothing."""
        inserted = await (q or self.db).fetchval(
            "INSERT INTO trigger_runs (task_id, run_key, scheduled_at, fired_at, outcome)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (task_id, run_key) DO NOTHING"
            " RETURNING id", task_id, run_key, scheduled_at, at,
            outcome.value if isinstance(outcome, RunOutcome) else outcome)
        return inserted is not None

    async def finish_run(self, task_id: str, run_key: str, outcome: RunOutcome,
                         detail: str | None = None, *, only_if: str | None = None) -> None:
        """Set a run's outcome (with `only_if`, only while it still has that outcome: the
        run's own turn may have said more already, e.g. "nothing to report")."""
        await self.db.execute(
            "UPDATE trigger_runs SET outcome = $3, detail = $4 WHERE task_id = $1"
            " AND run_key = $2 AND ($5 = '' OR outcome = $5)", task_id, run_key,
            outcome.value, detail, only_if or "")

    async def finish_runs(self, outcomes: list[tuple[str, str, RunOutcome, str | None]], *,
                          only_if: str) -> None:
        """finish_run for many runs, in one transaction."""
        if not outcomes:
            return
        async with self.db.transaction() as tx:
            for task_id, run_key, outcome, detail in outcomes:
                await tx.execute(
                    "UPDATE trigger_runs SET outcome = $3, detail = $4 WHERE task_id = $1"
                    " AND run_key = $2 AND outcome = $5", task_id, run_key, outcome.value,
                    detail, only_if)

    async def runs(self, task_id: str) -> list[Row]:
        return await self.db.fetch(
            "SELECT run_key, scheduled_at, outcome, detail, nothing_to_report FROM trigger_runs"
            " WHERE task_id = $1 ORDER BY scheduled_at, id", task_id)

    async def recent_runs(self, user_id: str, limit: int = 20) -> list[Row]:
        """A person's latest runs over all their tasks, newest first, with the task's name."""
        return await self.db.fetch(
            "SELECT r.task_id, t.name, r.run_key, r.scheduled_at, r.fired_at, r.outcome,"
            " r.detail FROM trigger_runs r JOIN trigger_tasks t ON t.id = r.task_id"
            " WHERE t.user_id = $1 ORDER BY r.fired_at DESC, r.id DESC LIMIT $2",
            user_id, limit)

    async def latest_run(self, task_id: str) -> Row | None:
        return await self.db.fetchrow(
            "SELECT run_key, scheduled_at, outcome FROM trigger_runs WHERE task_id = $1"
            " ORDER BY fired_at DESC, id DESC LIMIT 1", task_id)


def _column_value(value: Any) -> Any:
    if isinstance(value, TaskStatus | Misfire | TriggerKind):
        return value.value
    if isinstance(value, EventFilter | ConditionCheck):
        return json.dumps(value.to_json())
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, bool):
        return int(value)
    return value
