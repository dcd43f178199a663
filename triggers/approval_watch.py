"""Triggered runs that wait for a person's OK.

The approvals package owns approvals (with `trigger_task_id`); this module asks it what a
task's runs wait for (`bot.approvals.triggered`) and never reads the table itself: a task
whose run opened an approval pauses (PENDING_APPROVAL) and moves on once every one of
them is decided (back to where it was) or one expired (a one-time task becomes EXPIRED, a
recurring one goes on with its next run; either way the person is told)."""

from __future__ import annotations

import logging
from datetime import datetime

from bot.approvals.triggered import TriggerApprovals
from bot.contracts.approvals import ApprovalStatus
from bot.contracts.envelopes import Notification, Urgency
from persona.lines import ScheduleLines, fill
from persona.speaking import speaking_to
from triggers.executors import LanguageOf, TriggerGateway
from triggers.model import RunOutcome, TaskStatus
from triggers.store import TaskStore

log = logging.getLogger(__name__)

# A task in one of these is not paused for its approvals (it already is, or is off).
_NOT_TO_PAUSE = (TaskStatus.PENDING_APPROVAL, TaskStatus.PAUSED, TaskStatus.DISABLED)


class ApprovalWatch:
    def __init__(self, approvals: TriggerApprovals, store: TaskStore,
                 gateway: TriggerGateway, lines: ScheduleLines,
                 language_of: LanguageOf | None = None) -> None:
        self.approvals = approvals
        self.store = store
        self.gateway = gateway
        self.lines = lines
        self.language_of = language_of  # the person's language (None: the persona's)

    async def settle(self, now: datetime) -> None:
        await self._pause_waiting(now)
        await self._move_on(now)

    async def _pause_waiting(self, now: datetime) -> None:
        for task_id in await self.approvals.tasks_waiting(now):
            task = await self.store.get(task_id)
            if task is None or task.status in _NOT_TO_PAUSE:
                continue
            if await self.store.set_status(task.id, TaskStatus.PENDING_APPROVAL, now,
                                           expect=task.status, resume=task.status):
                latest = await self.store.latest_run(task.id)
                if latest is not None:
                    await self.store.finish_run(task.id, latest["run_key"],
                                                RunOutcome.WAITING_APPROVAL)

    async def _move_on(self, now: datetime) -> None:
        for task in await self.store.with_status(TaskStatus.PENDING_APPROVAL):
            latest = await self.store.latest_run(task.id)
            since = latest["scheduled_at"] if latest else task.created_at
            states = await self.approvals.run_states(task.id, since, now)
            if ApprovalStatus.PENDING in states:
                continue
            expired = ApprovalStatus.EXPIRED in states
            after = task.resume_status or TaskStatus.ACTIVE
            if expired and not task.is_recurring():
                after = TaskStatus.EXPIRED
            if not await self.store.set_status(task.id, after, now,
                                               expect=TaskStatus.PENDING_APPROVAL):
                continue  # another process moved it on
            if latest is not None:
                await self.store.finish_run(
                    task.id, latest["run_key"],
                    RunOutcome.EXPIRED if expired else RunOutcome.DONE)
            if expired:
                run_key = latest["run_key"] if latest else "none"
                language = await self.language_of(task.user_id) if self.language_of else None
                with speaking_to(language):
                    said = fill(self.lines.schedule_approval_expired, name=task.name)
                await self.gateway.notify(Notification(
                    task.user_id, said,
                    dedupe_key=f"task-expired:{task.id}:{run_key}", channel=task.channel,
                    urgency=Urgency.URGENT))
