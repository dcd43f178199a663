"""What triggered runs wait for: the approvals a trigger's run opened, read for the trigger
engine (triggers/approval_watch.py), which pauses such a task and moves it on once its
approvals are decided.

Read-only: approval state changes only in ApprovalStore. The engine never reads the approvals
table itself; it asks here and gets task ids and typed statuses back.
"""

from __future__ import annotations

from datetime import datetime

from bot.contracts.approvals import ApprovalStatus
from bot.db import Database


class TriggerApprovals:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def tasks_waiting(self, at: datetime) -> list[str]:
        """Trigger tasks with at least one approval still waiting for its owner's word."""
        rows = await self.db.fetch(
            "SELECT DISTINCT trigger_task_id FROM approvals WHERE status = $2"
            " AND expires_at > $1 AND trigger_task_id IS NOT NULL",
            at, ApprovalStatus.PENDING.value)
        return [row["trigger_task_id"] for row in rows]

    async def run_states(self, task_id: str, since: datetime | None, at: datetime
                         ) -> list[ApprovalStatus]:
        """The statuses of the approvals this task's runs opened since `since` (None, a task
        never stored, has none); one still pending past its time counts as expired (whether
        or not a sweeper got to it yet)."""
        rows = await self.db.fetch(
            "SELECT status, expires_at FROM approvals WHERE trigger_task_id = $1"
            " AND created_at >= $2", task_id, since)
        states = [ApprovalStatus(row["status"]) for row in rows]
        return [ApprovalStatus.EXPIRED
                if state is ApprovalStatus.PENDING and row["expires_at"] <= at else state
                for state, row in zip(states, rows, strict=True)]
