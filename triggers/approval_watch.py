"""Triggered runs that wait for a person's OK.

The approvals package writes approvals (with `trigger_task_id`); this module only reads them:
a task whose run opened an approval pauses (PENDING_APPROVAL) and moves on once every one of
them is decided (back to where it was) or one expired (a one-time task becomes EXPIRED, a
recurring one goes on with its next run; either way the person is told)."""

from __future__ import annotations

import logging
from datetime import datetime

from bot.db import Database
from bot.envelopes import Notification, Urgency
from triggers.executors import TriggerGateway
from triggers.model import RunOutcome, TaskStatus
from triggers.store import TaskStore

log = logging.getLogger(__name__)

EXPIRED_NOTICE = "Your task “{name}” did not go ahead: the approval it needed expired."


class ApprovalWatch:
    def __init__(self, db: Database, store: TaskStore, gateway: TriggerGateway) -> None:
        self.db = db
        self.store = store
        self.gateway = gateway

    async def settle(self, now: datetime) -> None:
        await self._pause_waiting(now)
        await self._move_on(now)

    async def _pause_waiting(self, now: datetime) -> None:
        rows = await self.db.fetch(
            "SELECT DISTINCT t.id, t.status FROM approvals a JOIN trigger_tasks t"
            " ON t.id = a.trigger_task_id WHERE a.status = 'pending' AND a.expires_at > $1"
            " AND t.status NOT IN ('pending_approval', 'paused', 'disabled')", now)
        for row in rows:
            if await self.store.set_status(row["id"], TaskStatus.PENDING_APPROVAL, now,
                                           expect=TaskStatus(row["status"]),
                                           resume=TaskStatus(row["status"])):
                latest = await self.store.latest_run(row["id"])
                if latest is not None:
                    await self.store.finish_run(row["id"], latest["run_key"],
                                                RunOutcome.WAITING_APPROVAL)

    async def _move_on(self, now: datetime) -> None:
        for task in await self.store.with_status(TaskStatus.PENDING_APPROVAL):
            latest = await self.store.latest_run(task.id)
            since = latest["scheduled_at"] if latest else task.created_at
            states = [r["status"] if not (r["status"] == "pending" and r["expires_at"] <= now)
                      else "expired" for r in await self.db.fetch(
                          "SELECT status, expires_at FROM approvals WHERE trigger_task_id = $1"
                          " AND created_at >= $2", task.id, since)]
            if "pending" in states:
                continue
            expired = "expired" in states
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
                await self.gateway.notify(Notification(
                    task.user_id, EXPIRED_NOTICE.format(name=task.name),
                    dedupe_key=f"task-expired:{task.id}:{run_key}", channel=task.channel,
                    urgency=Urgency.URGENT))
