"""ApprovalStore: the only place approval state changes.

Every change of state is a compare-and-set on `status`, so a double tap, a retried webhook or
a second process gets "already decided" and runs nothing. Anything unclear fails closed.
"""

from __future__ import annotations

import json
import secrets
from datetime import datetime, timedelta
from typing import Any

from bot.approvals.model import (
    ApprovalRequest,
    ApprovalStatus,
    _ordered_id,
    args_hash,
)
from bot.db import Database, Queries, Row


def _approval(row: Row) -> ApprovalRequest:
    return ApprovalRequest(
        id=row["id"], code=row["code"], user_id=row["user_id"], call_id=row["call_id"],
        tool_name=row["tool_name"], arguments=json.loads(row["arguments"]),
        args_hash=row["args_hash"], summary=row["summary"], details=json.loads(row["details"]),
        expires_at=row["expires_at"], created_at=row["created_at"],
        status=ApprovalStatus(row["status"]), options=tuple(json.loads(row["options"])),
        allow_modification=bool(row["allow_modification"]), task_id=row["task_id"],
        source=row["source"], trigger_task_id=row["trigger_task_id"],
        replaces=row["replaces"], turn_id=row["turn_id"], decided_by=row["decided_by"],
        result=row["result"])


class ApprovalStore:
    """The only place approval state changes."""

    def __init__(self, db: Database, *, timeout: timedelta = timedelta(minutes=30)) -> None:
        self.db = db
        self.timeout = timeout

    async def create(self, *, user_id: str, call_id: str, tool_name: str,
                     arguments: dict[str, Any], summary: str, at: datetime,
                     details: dict[str, Any] | None = None, task_id: str | None = None,
                     allow_modification: bool = True, source: str = "chat",
                     trigger_task_id: str | None = None, replaces: str | None = None,
                     turn_id: str | None = None, q: Queries | None = None,
                     timeout: timedelta | None = None) -> ApprovalRequest:
        approval = ApprovalRequest(
            id=_ordered_id(), code="", user_id=user_id, call_id=call_id,
            tool_name=tool_name, arguments=arguments, args_hash=args_hash(arguments),
            summary=summary, details=details or {}, created_at=at,
            expires_at=at + (timeout or self.timeout), task_id=task_id,
            allow_modification=allow_modification, source=source,
            trigger_task_id=trigger_task_id, replaces=replaces, turn_id=turn_id)
        db = q or self.db
        for _ in range(20):  # a fresh 4-digit code, unique among this user's pending ones
            code = f"{secrets.randbelow(9000) + 1000}"
            inserted = await db.fetchval(
                "INSERT INTO approvals (id, code, user_id, task_id, call_id, tool_name,"
                " arguments, args_hash, summary, details, options, allow_modification, status,"
                " source, trigger_task_id, replaces, turn_id, created_at, expires_at)"
                " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13,"
                " $14, $15, $16, $17, $18 WHERE NOT EXISTS (SELECT 1 FROM approvals"
                " WHERE user_id = $3 AND code = $2 AND status = 'pending') RETURNING id",
                approval.id, code, user_id, task_id, call_id, tool_name,
                json.dumps(arguments), approval.args_hash, summary,
                json.dumps(approval.details, default=str), json.dumps(list(approval.options)),
                int(allow_modification), source, trigger_task_id, replaces, turn_id, at,
                approval.expires_at)
            if inserted:
                return ApprovalRequest(**{**approval.__dict__, "code": code})
        raise RuntimeError(f"could not find a free approval code for {user_id}")

    async def get(self, approval_id: str) -> ApprovalRequest | None:
        row = await self.db.fetchrow("SELECT * FROM approvals WHERE id = $1", approval_id)
        return _approval(row) if row else None

    async def pending(self, user_id: str, at: datetime) -> list[ApprovalRequest]:
        """What waits for this user now (expired ones are not listed), oldest first."""
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE user_id = $1 AND status = 'pending'"
            " AND expires_at > $2 ORDER BY created_at, id", user_id, at)
        return [_approval(r) for r in rows]

    async def decide(self, approval_id: str, status: ApprovalStatus, *, by: str,
                     at: datetime) -> bool:
        """pending -> approved | rejected | superseded, once, and only before it expires."""
        assert status in (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED,
                          ApprovalStatus.SUPERSEDED)
        changed = await self.db.execute(
            "UPDATE approvals SET status = $2, decided_by = $3, decided_at = $4"
            " WHERE id = $1 AND status = 'pending' AND expires_at > $4",
            approval_id, status.value, by, at)
        return changed == 1

    async def finish_rejected(self, approval_id: str, result: str) -> None:
        """Record what the requester's conversation should hear of a rejection."""
        await self.db.execute("UPDATE approvals SET result = $2 WHERE id = $1"
                              " AND status = 'rejected'", approval_id, result)

    async def begin_execution(self, approval_id: str, at: datetime) -> bool:
        """approved -> executing: whoever wins this runs the action; nobody else ever will."""
        return await self.db.execute(
            "UPDATE approvals SET status = 'executing', executed_at = $2"
            " WHERE id = $1 AND status = 'approved'", approval_id, at) == 1

    async def finish(self, approval_id: str, ok: bool, result: str) -> None:
        await self.db.execute(
            "UPDATE approvals SET status = $2, result = $3 WHERE id = $1"
            " AND status = 'executing'",
            approval_id, (ApprovalStatus.EXECUTED if ok else ApprovalStatus.FAILED).value,
            result)

    async def expire_due(self, at: datetime, user_id: str | None = None
                         ) -> list[ApprovalRequest]:
        """pending -> expired for every approval past its time (one user's, or everyone's);
        returns the ones this call expired (each exactly once, whoever else is sweeping)."""
        rows = await self.db.fetch(
            "SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= $1"
            " AND ($2 = '' OR user_id = $2)", at, user_id or "")
        expired = []
        for row in rows:
            changed = await self.db.execute(
                "UPDATE approvals SET status = 'expired', decided_at = $2"
                " WHERE id = $1 AND status = 'pending'", row["id"], at)
            if changed:
                approval = await self.get(row["id"])
                if approval:
                    expired.append(approval)
        return expired

    async def abandon_interrupted(self, older_than: datetime) -> int:
        """An `executing` row whose process died: the action may or may not have run. Fail
        closed: mark it failed, never run it again."""
        return await self.db.execute(
            "UPDATE approvals SET status = 'failed', result = 'interrupted: the action may not"
            " have completed' WHERE status = 'executing' AND executed_at < $1", older_than)

    async def mark_reported(self, approval_ids: list[str]) -> None:
        for approval_id in approval_ids:
            await self.db.execute("UPDATE approvals SET reported = 1 WHERE id = $1",
                                  approval_id)

    async def unreported(self, user_id: str) -> list[ApprovalRequest]:
        """Settled approvals whose outcome has not reached the conversation yet."""
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE user_id = $1 AND reported = 0 AND status IN"
            " ('expired', 'executed', 'failed', 'rejected') ORDER BY created_at, id", user_id)
        return [_approval(r) for r in rows]

    async def list(self, user_id: str | None = None, status: str | None = None,
                   limit: int = 50) -> list[ApprovalRequest]:
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE ($1 = '' OR user_id = $1) AND ($2 = '' OR status = $2)"
            " ORDER BY created_at DESC LIMIT $3", user_id or "", status or "", limit)
        return [_approval(r) for r in rows]
