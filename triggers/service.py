"""What people (through the LLM's tools, /tasks and the CLI) do with their tasks: create from
plain language, list in words, change, pause, resume, delete. Everything is checked here, so
every entry point gives the same clear errors, and a person only ever touches their own."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.contracts.clock import Clock
from persona.lines import ScheduleLines
from triggers.changes import TaskChanges
from triggers.describe import tasks_text
from triggers.executors import EXECUTORS
from triggers.model import (
    ConditionCheck,
    EventFilter,
    Misfire,
    RunKey,
    RunOutcome,
    Task,
    TaskStatus,
    TriggerKind,
)
from triggers.phrases import parse_schedule
from triggers.store import TaskStore, new_task_id
from triggers.task_limits import OverTaskLimit, TaskLimitCheck
from triggers.templates import MORNING_SUMMARY

# Defaults per kind (ARCHITECTURE 7): a reminder missed while down still goes within a day; a
# summary older than an hour is recorded "missed"; a frequent job never catches up.
REMINDER_GRACE = timedelta(hours=24)
SUMMARY_GRACE = timedelta(hours=1)


class TaskError(ValueError):
    """A request about tasks that cannot be done; the message says why."""


@dataclass(frozen=True)
class Owner:
    user_id: str
    timezone: str
    created_from: str | None = None
    channel: str | None = None  # where the person is setting it up (None: a shell)


class TaskService:
    def __init__(self, store: TaskStore, clock: Clock, changes: TaskChanges, *,
                 lines: ScheduleLines, executors: Collection[str] = EXECUTORS,
                 limits: TaskLimitCheck | None = None) -> None:
        self.store = store
        self.clock = clock
        self.changes = changes
        self.lines = lines  # the listing's words (/tasks, and the tool that lists them)
        self.executors = sorted(executors)
        self.limits = limits  # None: no limits (tests of the engine alone)

    def _now(self) -> datetime:
        return self.clock.now()

    async def schedule(self, owner: Owner, *, name: str, schedule: str, instruction: str = "",
                       executor: str = "orchestrator", action: dict[str, Any] | None = None,
                       channel: str | None = None, quiet_when_nothing: bool = False,
                       template: str | None = None) -> Task:
        """A schedule in plain language or cron, in the owner's timezone."""
        if executor not in self.executors:
            raise TaskError(f"unknown executor {executor!r}; known: "
                            f"{', '.join(self.executors)}")
        try:
            parsed = parse_schedule(schedule, self._now().astimezone(ZoneInfo(owner.timezone)))
        except ValueError as err:
            raise TaskError(str(err)) from None
        once = parsed.run_at is not None
        kind = TriggerKind.ONCE if once else (
            TriggerKind.CRON if parsed.cron else TriggerKind.INTERVAL)
        grace = REMINDER_GRACE if executor == "reminder" or once else SUMMARY_GRACE
        misfire = Misfire.SKIP if kind is TriggerKind.INTERVAL else Misfire.CATCH_UP
        return await self._add(Task(
            id=new_task_id(), user_id=owner.user_id, name=name[:80] or instruction[:40],
            kind=kind, timezone=owner.timezone, status=TaskStatus.ACTIVE, misfire=misfire,
            grace_seconds=int(grace.total_seconds()), executor=executor,
            action=action or {"instruction": instruction}, channel=channel or None,
            cron=parsed.cron, interval_seconds=parsed.interval_seconds,
            run_at=parsed.run_at.astimezone(UTC) if parsed.run_at else None,
            quiet_when_nothing=quiet_when_nothing, template=template,
            created_from=owner.created_from, origin_channel=owner.channel))

    async def remind(self, owner: Owner, text: str, due_at: datetime,
                     channel: str | None = None) -> Task:
        """A one-time reminder: its text is sent at `due_at`; no LLM call."""
        return await self._add(Task(
            id=new_task_id(), user_id=owner.user_id, name=f"Reminder: {text}"[:80],
            kind=TriggerKind.ONCE, timezone=owner.timezone, status=TaskStatus.ACTIVE,
            misfire=Misfire.CATCH_UP, grace_seconds=int(REMINDER_GRACE.total_seconds()),
            executor="reminder", action={"text": text}, channel=channel,
            run_at=due_at.astimezone(UTC), created_from=owner.created_from,
            origin_channel=owner.channel))

    async def morning_summary(self, owner: Owner, schedule: str = "every day at 7:30",
                              channel: str | None = None) -> Task:
        return await self.schedule(owner, name="Morning summary", schedule=schedule,
                                   instruction="morning summary", channel=channel,
                                   template=MORNING_SUMMARY)

    async def on_event(self, owner: Owner, *, name: str, instruction: str, source: str,
                       type: str, fields: dict[str, Any] | None = None) -> Task:
        return await self._add(Task(
            id=new_task_id(), user_id=owner.user_id, name=name[:80] or instruction[:40],
            kind=TriggerKind.EVENT, timezone=owner.timezone, status=TaskStatus.ACTIVE,
            misfire=Misfire.SKIP, grace_seconds=0, action={"instruction": instruction},
            event_filter=EventFilter(source or "*", type or "*", dict(fields or {})),
            created_from=owner.created_from, origin_channel=owner.channel))

    async def when(self, owner: Owner, *, name: str, instruction: str, check: ConditionCheck,
                   every: timedelta) -> Task:
        if every < timedelta(minutes=1):
            raise TaskError("a condition is checked at most once a minute")
        from triggers.conditions import OPERATORS

        if check.op not in OPERATORS:
            raise TaskError(f"unknown comparison {check.op!r}; use one of {sorted(OPERATORS)}")
        return await self._add(Task(
            id=new_task_id(), user_id=owner.user_id, name=name[:80] or instruction[:40],
            kind=TriggerKind.CONDITION, timezone=owner.timezone, status=TaskStatus.ACTIVE,
            misfire=Misfire.SKIP, grace_seconds=0, action={"instruction": instruction},
            interval_seconds=int(every.total_seconds()), condition=check,
            created_from=owner.created_from, origin_channel=owner.channel))

    async def _admit(self, task: Task, replacing: str | None = None) -> None:
        if self.limits is None:
            return
        try:
            await self.limits.admit(task, self._now(), replacing=replacing)
        except OverTaskLimit as err:
            raise TaskError(f"not set up: {err}") from None

    async def _add(self, task: Task) -> Task:
        await self._admit(task)
        stored = await self.store.add(task, self._now())
        await self.changes.changed()
        return stored

    async def listing(self, user_id: str) -> str:
        return tasks_text(await self.store.of_user(user_id), self._now(), self.lines)

    async def own(self, user_id: str, task_id: str) -> Task:
        task = await self.store.get(task_id.strip())
        if task is None or task.user_id != user_id:
            raise TaskError(f"no task {task_id!r} (see the list of tasks for their ids)")
        return task

    async def pause(self, user_id: str, task_id: str) -> Task:
        task = await self.own(user_id, task_id)
        await self._set_status(task, TaskStatus.PAUSED)
        return task

    async def resume(self, user_id: str, task_id: str) -> Task:
        task = await self.own(user_id, task_id)
        if task.status not in (TaskStatus.PAUSED, TaskStatus.DISABLED):
            raise TaskError(f"{task.name} is {task.status.value}, not paused")
        await self._admit(task, replacing=task.id)
        await self._set_status(task, TaskStatus.ACTIVE)
        return task

    async def delete(self, user_id: str, task_id: str) -> Task:
        task = await self.own(user_id, task_id)
        await self.store.remove(task.id)
        await self.changes.changed()
        return task

    async def change(self, user_id: str, task_id: str, *, schedule: str = "",
                     instruction: str = "", channel: str = "") -> Task:
        task = await self.own(user_id, task_id)
        now = self._now()
        changes: dict[str, Any] = {}
        if instruction:
            changes["action"] = {**task.action, ("text" if task.executor == "reminder"
                                                 else "instruction"): instruction}
        if channel:
            changes["channel"] = channel
        if schedule:
            if task.kind not in (TriggerKind.CRON, TriggerKind.INTERVAL, TriggerKind.ONCE):
                raise TaskError("only scheduled tasks have a schedule to change")
            try:
                parsed = parse_schedule(schedule, now.astimezone(ZoneInfo(task.timezone)))
            except ValueError as err:
                raise TaskError(str(err)) from None
            kind = TriggerKind.ONCE if parsed.run_at else (
                TriggerKind.CRON if parsed.cron else TriggerKind.INTERVAL)
            run_at = parsed.run_at.astimezone(UTC) if parsed.run_at else None
            changed = Task(**{**task.__dict__, "kind": kind, "cron": parsed.cron,
                              "interval_seconds": parsed.interval_seconds, "run_at": run_at,
                              "created_at": now})
            await self._admit(changed, replacing=task.id)
            changes.update(kind=kind, cron=parsed.cron, run_at=run_at,
                           interval_seconds=parsed.interval_seconds,
                           next_run_at=changed.next_after(now), created_at=now)
            if task.status is TaskStatus.COMPLETED:
                changes["status"] = TaskStatus.ACTIVE
        if not changes:
            raise TaskError("say what to change: the schedule, the instruction or the channel")
        await self.store.update(task.id, now, **changes)
        await self.changes.changed()
        return await self.own(user_id, task.id)

    async def _set_status(self, task: Task, status: TaskStatus) -> None:
        now = self._now()
        await self.store.set_status(task.id, status, now)
        if status is TaskStatus.ACTIVE and task.is_recurring():
            # Resuming does not replay what fell due while paused.
            await self.store.update(task.id, now, next_run_at=task.next_after(now))
        await self.changes.changed()

    async def nothing_to_report(self, user_id: str, message_key: str | None) -> bool:
        """Mark the person's triggered run (the turn's message key) as having nothing to
        report. False when the turn answers no run of theirs (a person wrote)."""
        key = RunKey.parse(message_key or "")
        if key is None:
            return False
        return await self.store.db.execute(
            "UPDATE trigger_runs SET nothing_to_report = 1, outcome = $4 WHERE task_id = $1"
            " AND run_key = $2 AND EXISTS (SELECT 1 FROM trigger_tasks t"
            " WHERE t.id = trigger_runs.task_id AND t.user_id = $3)",
            key.task_id, key.run, user_id, RunOutcome.NOTHING.value) > 0

    async def silenced(self, message_key: str) -> bool:
        """For the gateway: should a triggered turn's reply (its TriggerMessage key) stay
        unsent? Yes when the run said it had nothing to report and its task says so."""
        key = RunKey.parse(message_key)
        return key is not None and bool(await self.store.db.fetchval(
            "SELECT 1 FROM trigger_runs r JOIN trigger_tasks t ON t.id = r.task_id"
            " WHERE r.task_id = $1 AND r.run_key = $2"
            " AND r.nothing_to_report = 1 AND t.quiet_when_nothing = 1", key.task_id, key.run))
