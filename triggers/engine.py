"""TriggerEngine: the database says what should run; APScheduler only wakes the engine up.

Why not one APScheduler job per task: the jobs would be a second copy of the truth, their
misfire handling is per job and in the process's memory, and they read the wall clock, so a
test could not move time. Instead `tick()` reads what is due from the database with the
injected clock, records each run under its unique (task, run key) and hands it to its
executor; APScheduler's AsyncIOScheduler (in-memory job store) holds two jobs rebuilt from the
database at start and after every change: `wake` at the earliest next run, and a `heartbeat`
that renews the leader's lease, takes over from a dead leader and settles approvals. Tests call
`tick()` after moving a FakeClock; nothing sleeps for real minutes.

Exactly once: a run is inserted before it is executed (a duplicate fire, a fall-back hour, a
second process: the insert finds it and nothing happens); executors are themselves idempotent
on the run's key, so a run interrupted between its record and its effect is fired again at
start (`firing` rows) without a second message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from bot.approvals.triggered import TriggerApprovals
from bot.contracts.clock import Clock
from bot.db import Database
from bot.people.users import UserStore
from persona.lines import ScheduleLines
from triggers.approval_watch import ApprovalWatch
from triggers.changes import TaskChanges
from triggers.conditions import Checker, ConditionError, holds
from triggers.event_windows import EventWindows
from triggers.events import Event, EventBus, EventPattern
from triggers.executors import ExecutorRegistry, RunContext, TriggerGateway
from triggers.lease import DatabaseLease
from triggers.model import Misfire, RunOutcome, Task, TaskStatus, TriggerKind
from triggers.run_fate import settle_submitted
from triggers.store import TaskStore

log = logging.getLogger(__name__)

FIRING = "firing"  # a run recorded, its executor not yet finished


@dataclass(frozen=True)
class EngineSettings:
    heartbeat_seconds: float = 15.0  # lease renewal, takeover, approvals
    lease_seconds: float = 45.0  # a dead leader is replaced within this (plus a heartbeat)
    on_time_slack: timedelta = timedelta(minutes=2)  # "on time" for Misfire.SKIP
    max_missed_recorded: int = 50  # missed occurrences recorded per task after downtime
    batch: int = 500
    # An event task runs at most once a window: the events after the first are held and go
    # to one run when it ends (triggers/event_windows.py). 0: every event its own run.
    event_window: timedelta = timedelta(seconds=60)


class TriggerEngine:
    def __init__(self, db: Database, clock: Clock, gateway: TriggerGateway,
                 executors: ExecutorRegistry, *, bus: EventBus | None = None,
                 checker: Checker | None = None, settings: EngineSettings | None = None,
                 holder: str | None = None, changes: TaskChanges | None = None,
                 lines: ScheduleLines) -> None:
        self.db = db
        self.clock = clock
        self.gateway = gateway
        self.store = TaskStore(db)
        self.executors = executors
        self.bus = bus
        self.checker = checker
        self.settings = settings or EngineSettings()
        self.holder = holder or default_holder()
        self.lease = DatabaseLease(db, self.holder,
                                   ttl=timedelta(seconds=self.settings.lease_seconds))
        self.windows = EventWindows(db, self.settings.event_window)
        self.approvals = ApprovalWatch(TriggerApprovals(db), self.store, gateway, lines,
                                       language_of=UserStore(db).language_of)
        self.leading = False
        self._lock = asyncio.Lock()
        self._scheduler: AsyncIOScheduler | None = None
        self._stopped = False
        if changes is not None:  # a person changed a task: rebuild the wake-up
            changes.listen(self.changed)
        # Told (due time, firing time) of every run it fires: the scheduler's lag (/metrics).
        self.on_fired: Callable[[datetime, datetime], None] | None = None

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self, *, wake_up: bool = True) -> None:
        """Subscribe to events, fire what is due, and (with `wake_up`) let APScheduler call
        `tick` when the next run is due and at every heartbeat."""
        if self.bus is not None:
            self.bus.subscribe(EventPattern(), self.on_event)
        if wake_up:
            self._scheduler = AsyncIOScheduler(timezone=UTC)
            self._scheduler.add_job(self.tick, "interval", id="heartbeat",
                                    seconds=self.settings.heartbeat_seconds,
                                    max_instances=1, coalesce=True)
            self._scheduler.start()
        await self.tick()

    async def stop(self) -> None:
        # The lock first: a tick under way finishes its queries (APScheduler's shutdown would
        # cancel it mid-query); ticks that start later see `_stopped` and do nothing.
        async with self._lock:
            self._stopped = True
            if self._scheduler is not None:
                self._scheduler.shutdown(wait=False)
                self._scheduler = None
            if self.leading:
                await self.lease.release()  # the next process leads at its next heartbeat
            self.leading = False

    async def changed(self) -> None:
        """A task was added or changed: the wake-up job is rebuilt from the database."""
        async with self._lock:
            await self._reschedule()

    async def _reschedule(self) -> None:
        """Only the leader wakes up for runs; a follower tries to lead at each heartbeat."""
        if self._scheduler is None or self._stopped or not self.leading:
            return
        due = await self.store.next_due_at()
        if due is None:
            if self._scheduler.get_job("wake"):
                self._scheduler.remove_job("wake")
            return
        # The injected clock decides how long to wait; APScheduler waits it on the real one.
        delay = max((due - self.clock.now()).total_seconds(), 0.0)
        self._scheduler.add_job(self.tick, "date", id="wake", replace_existing=True,
                                run_date=datetime.now(UTC) + timedelta(seconds=delay),
                                misfire_grace_time=None, max_instances=2)

    # --- the tick ------------------------------------------------------------------------

    async def tick(self) -> None:
        """Lead if possible; the leader fires every due run and settles approvals."""
        async with self._lock:
            if self._stopped:
                return
            now = self.clock.now()
            was_leading = self.leading
            self.leading = await self.lease.acquire(now)
            if self.leading and not was_leading:
                log.info("%s leads the trigger schedule", self.holder)
                await self._refire_interrupted()
            if self.leading:
                await self._fire_due(now)
                await self.approvals.settle(now)
                await settle_submitted(self.db)  # what became of the runs' turns
            await self._reschedule()

    async def _fire_due(self, now: datetime) -> None:
        """Due tasks in batches: each batch's runs are recorded (and the tasks moved on) in
        one transaction, then executed one by one, yielding between them so the people's
        turns start while the rest is still being dispatched."""
        while True:
            due = await self.store.due(now, self.settings.batch)
            for task in (t for t in due if t.kind is TriggerKind.CONDITION):
                await self._guarded(task, now, self._poll_and_advance(task, now))
            for task in (t for t in due if t.kind is TriggerKind.EVENT):
                await self._guarded(task, now, self._close_window(task, now))
            scheduled = [t for t in due
                         if t.kind not in (TriggerKind.CONDITION, TriggerKind.EVENT)]
            runs = await self._record_batch(scheduled, now) if scheduled else []
            finished = []
            for run in runs:
                if self.on_fired is not None:
                    self.on_fired(run.scheduled_at, now)
                finished.append((run, *await self._call_executor(run)))
                await asyncio.sleep(0)
            await self.store.finish_runs(
                [(r.task.id, r.run_key, outcome, detail) for r, outcome, detail in finished],
                only_if=FIRING)
            if len(due) < self.settings.batch:
                return

    async def _guarded(self, task: Task, now: datetime, work: Any) -> None:
        try:
            await work
        except Exception:  # one broken task must not stop everyone's schedule
            log.exception("task %s failed to fire; disabled", task.id)
            await self.store.set_status(task.id, TaskStatus.DISABLED, now)

    async def _close_window(self, task: Task, now: datetime) -> None:
        """An event task's window has ended: the events held in it go to one run."""
        assert task.next_run_at is not None
        key = f"events:{_key(task.next_run_at)}"
        async with self.db.transaction() as tx:
            claimed = await self.store.claim_run(task.id, key, task.next_run_at, FIRING, now,
                                                 q=tx)
            taken = await self.windows.take(task.id, key, tx) if claimed else 0
            await self.store.window_closed(task.id, now, q=tx)
        if claimed and taken:
            await self._execute(RunContext(task, key, task.next_run_at,
                                           events=await self.windows.of_run(task.id, key)))
        elif claimed:  # nothing came after all (they went with a run of their own)
            await self.store.finish_run(task.id, key, RunOutcome.NOTHING, None, only_if=FIRING)

    async def _poll_and_advance(self, task: Task, now: datetime) -> None:
        await self._poll_condition(task, now)
        await self.store.advance(task, task.next_after(now), now, ran=False)

    async def _record_batch(self, tasks: list[Task], now: datetime) -> list[RunContext]:
        """Record every due run (missed ones as such) and move each task to its next run;
        returns the runs this engine recorded first (a duplicate fire records nothing)."""
        plans, broken = [], []
        for task in tasks:
            try:
                plans.append(self._plan(task, now))
            except Exception:
                log.exception("task %s: cannot compute its schedule; disabled", task.id)
                broken.append(task)
        runs: list[RunContext] = []
        async with self.db.transaction() as tx:
            for task, missed, run_at, next_at in plans:
                for at in missed:
                    await self.store.claim_run(task.id, _key(at), at, RunOutcome.MISSED, now,
                                               q=tx)
                if run_at is not None and await self.store.claim_run(
                        task.id, _key(run_at), run_at, FIRING, now, q=tx):
                    runs.append(RunContext(task, _key(run_at), run_at))
                await self.store.advance(task, next_at, now, ran=run_at is not None, q=tx)
        for task in broken:
            await self.store.set_status(task.id, TaskStatus.DISABLED, now)
        return runs

    def _plan(self, task: Task, now: datetime
              ) -> tuple[Task, list[datetime], datetime | None, datetime | None]:
        """(task, occurrences to record as missed, the one to run or None, next run)."""
        assert task.next_run_at is not None
        occurrences = [task.next_run_at]
        while len(occurrences) <= self.settings.max_missed_recorded:
            following = task.next_after(occurrences[-1])
            if following is None or following > now:
                break
            occurrences.append(following)
        *older, latest = occurrences
        next_at = task.next_after(max(latest, now))
        if now - latest <= self._tolerance(task):
            return task, older, latest, next_at
        log.info("task %s: run due %s missed (late %s)", task.id, latest, now - latest)
        return task, [*older, latest], None, next_at

    def _tolerance(self, task: Task) -> timedelta:
        if task.misfire is Misfire.SKIP:
            return self.settings.on_time_slack
        return max(timedelta(seconds=task.grace_seconds), self.settings.on_time_slack)

    async def _run(self, run: RunContext, now: datetime) -> RunOutcome | None:
        """Record the run, then execute it; None when it was recorded before (a no-op)."""
        if not await self.store.claim_run(run.task.id, run.run_key, run.scheduled_at, FIRING,
                                          now):
            return None
        return await self._execute(run)

    async def _execute(self, run: RunContext) -> RunOutcome:
        outcome, detail = await self._call_executor(run)
        await self.store.finish_run(run.task.id, run.run_key, outcome, detail, only_if=FIRING)
        if run.events:
            await self.windows.done(run.task.id, run.run_key)
        return outcome

    async def _call_executor(self, run: RunContext) -> tuple[RunOutcome, str | None]:
        executor = self.executors.get(run.task.executor)
        if executor is None:
            return RunOutcome.FAILED, f"no executor named {run.task.executor!r}"
        try:
            return await executor.execute(run), None
        except Exception as err:
            log.exception("task %s run %s failed", run.task.id, run.run_key)
            return RunOutcome.FAILED, f"{type(err).__name__}: {err}"

    async def _refire_interrupted(self) -> None:
        """Runs recorded by a process that died before its executor finished: executors are
        idempotent on the run key, so firing them again sends nothing twice."""
        rows = await self.db.fetch(
            "SELECT task_id, run_key, scheduled_at FROM trigger_runs WHERE outcome = $1", FIRING)
        for row in rows:
            task = await self.store.get(row["task_id"])
            if task is not None:
                await self._execute(RunContext(task, row["run_key"], row["scheduled_at"],
                                               events=await self.windows.of_run(
                                                   task.id, row["run_key"])))

    # --- events and conditions -------------------------------------------------------------

    async def on_event(self, event: Event) -> None:
        """Every active event task whose filter matches takes the event once: at once when
        its window is open, else with the others held until the window ends."""
        now = self.clock.now()
        for task in await self.store.listening():
            flt = task.event_filter
            if flt is None or not EventPattern(flt.source, flt.type, flt.fields).matches(event):
                continue
            key = f"event:{event.id}"
            if await self.store.held_run_key(task.id, event.id) == key \
                    or await self.store.open_window(task.id, now, self.settings.event_window):
                await self.windows.hold(task.id, event, now, run_key=key)
                await self._run(RunContext(task, key, now,
                                           events=await self.windows.of_run(task.id, key)), now)
            elif await self.windows.hold(task.id, event, now):
                await self.store.window_ends(task.id, self.settings.event_window)
                await self.changed()  # the wake-up comes for the window's end

    async def _poll_condition(self, task: Task, now: datetime) -> None:
        check = task.condition
        if check is None or self.checker is None:
            return
        try:
            observed = await self.checker(task, check)
            held = holds(check, observed)
        except (ConditionError, ValueError) as err:
            log.warning("task %s: condition check failed: %s", task.id, err)
            return
        cooled = task.last_fired_at is None or \
            now - task.last_fired_at >= timedelta(seconds=check.cooldown_seconds)
        fire = held and not task.last_held and cooled
        changes: dict[str, Any] = {"last_value": _json(observed), "last_held": held}
        if fire:
            changes["last_fired_at"] = now
        await self.store.update(task.id, now, **changes)
        if fire:
            await self._run(RunContext(task, f"condition:{_key(now)}", now, observed=observed),
                            now)

    # --- by hand ---------------------------------------------------------------------------

    async def run_now(self, task_id: str) -> RunOutcome | None:
        """Run a task at once (whatever its schedule), under a key of its own."""
        task = await self.store.get(task_id)
        if task is None:
            return None
        now = self.clock.now()
        return await self._run(RunContext(task, f"manual:{_key(now)}", now), now)


def default_holder() -> str:
    """Who holds the lease, as an operator looking at `trigger_leases` wants to read it: the
    host and process id (which process to look at), and a random part (a pid reused after a
    restart is still another holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _key(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(value: Any) -> str:
    return json.dumps(value, default=str)
