"""ApprovalStore: the only place approval state changes.

Every change of state is a compare-and-set on `status`, so a double tap, a retried webhook or
a second process gets "already decided" and runs nothing. Anything unclear fails closed.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from bot.contracts.approvals import (
    OUTCOMES,
    ApprovalRequest,
    ApprovalStatus,
    args_hash,
    new_approval_id,
)
from bot.contracts.options import Option
from bot.db import Database, Queries, Row
from bot.db.turn_reads import Holding, may_hold, now_holds

# What a turn reads of a person's approvals (pending ones, settled ones not yet reported),
# asked with their row: a turn of someone with none reads nothing here (bot.db.turn_reads).
HOLDING = Holding("approvals", "EXISTS (SELECT 1 FROM approvals WHERE user_id = $1 AND"
                  " (status = 'pending' OR (reported = 0 AND status IN"
                  " ('expired', 'executed', 'failed', 'rejected'))))")


def _approval(row: Row) -> ApprovalRequest:
    return ApprovalRequest(
        id=row["id"], code=row["code"], user_id=row["user_id"], call_id=row["call_id"],
        tool_name=row["tool_name"], arguments=json.loads(row["arguments"]),
        args_hash=row["args_hash"], summary=row["summary"], details=json.loads(row["details"]),
        expires_at=row["expires_at"], created_at=row["created_at"],
        status=ApprovalStatus(row["status"]),
        options=tuple(Option(o) for o in json.loads(row["options"])),
        allow_modification=bool(row["allow_modification"]), task_id=row["task_id"],
        source=row["source"], trigger_task_id=row["trigger_task_id"],
        replaces=row["replaces"], turn_id=row["turn_id"], decided_by=row["decided_by"],
        result=row["result"], lease_until=row["lease_until"])


# What a request's conversation hears when its process died under it (fail closed: it is
# never run again).
INTERRUPTED = "Outcome unknown: the process stopped while the action ran, so it may or may " \
    "not have happened. The user was told to check, and offered to try again."
NOT_STARTED = "Interrupted before it started: nothing was done."


class ApprovalStore:
    """The only place approval state changes.

    A request that is `approved` or `executing` holds a lease (`lease_until`): the process
    that decided or runs it renews it while it works. A lease that lapsed means that process
    died; `interrupt_lapsed` settles such requests as interrupted (never started) or unknown
    (it may have acted), and never runs them again."""

    def __init__(self, db: Database, *, timeout: timedelta = timedelta(minutes=30),
                 lease: timedelta = timedelta(seconds=30)) -> None:
        self.db = db
        self.timeout = timeout
        self.lease = lease

    async def create(self, *, user_id: str, call_id: str, tool_name: str,
                     arguments: dict[str, Any], summary: str, at: datetime,
                     details: dict[str, Any] | None = None, task_id: str | None = None,
                     allow_modification: bool = True, source: str = "chat",
                     trigger_task_id: str | None = None, replaces: str | None = None,
                     turn_id: str | None = None, q: Queries | None = None,
                     timeout: timedelta | None = None) -> ApprovalRequest:
        approval = ApprovalRequest(
            id=new_approval_id(), code="", user_id=user_id, call_id=call_id,
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
                " source, trigger_task_id, replaces, turn_id, created_at, expires_at, seq)"
                " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13,"
                " $14, $15, $16, $17, $18, (SELECT COALESCE(MAX(seq), 0) + 1 FROM approvals"
                " WHERE user_id = $3) WHERE NOT EXISTS (SELECT 1 FROM approvals"
                " WHERE user_id = $3 AND code = $2 AND status = 'pending') RETURNING id",
                approval.id, code, user_id, task_id, call_id, tool_name,
                json.dumps(arguments), approval.args_hash, summary,
                json.dumps(approval.details, default=str), json.dumps(list(approval.options)),
                int(allow_modification), source, trigger_task_id, replaces, turn_id, at,
                approval.expires_at)
            if inserted:
                now_holds(user_id, HOLDING.name)
                return ApprovalRequest(**{**approval.__dict__, "code": code})
        raise RuntimeError(f"could not find a free approval code for {user_id}")

    async def get(self, approval_id: str) -> ApprovalRequest | None:
        row = await self.db.fetchrow("SELECT * FROM approvals WHERE id = $1", approval_id)
        return _approval(row) if row else None

    async def pending(self, user_id: str, at: datetime) -> list[ApprovalRequest]:
        """What waits for this user now (expired ones are not listed), oldest first."""
        if not may_hold(user_id, HOLDING.name):
            return []
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE user_id = $1 AND status = 'pending'"
            " AND expires_at > $2 ORDER BY created_at, seq, id", user_id, at)
        return [_approval(r) for r in rows]

    async def decide(self, approval_id: str, status: ApprovalStatus, *, by: str,
                     at: datetime) -> bool:
        """pending -> approved | rejected | superseded, once, and only before it expires. An
        approved request is leased to this process until its execution begins."""
        assert status in (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED,
                          ApprovalStatus.SUPERSEDED)
        lease_until = at + self.lease if status is ApprovalStatus.APPROVED else None
        changed = await self.db.execute(
            "UPDATE approvals SET status = $2, decided_by = $3, decided_at = $4,"
            " lease_until = $5 WHERE id = $1 AND status = 'pending' AND expires_at > $4",
            approval_id, status.value, by, at, lease_until)
        return changed == 1

    async def ask_change(self, approval_id: str, at: datetime) -> bool:
        """Edit was tapped and Valet asked what to change: the person's next message is
        the change. Only while the request still waits."""
        changed = await self.db.execute(
            "UPDATE approvals SET change_asked_at = $2 WHERE id = $1 AND status = 'pending'"
            " AND expires_at > $2", approval_id, at)
        return changed == 1

    async def change_asked(self, user_id: str, at: datetime) -> bool:
        """Whether this user's next message is read as a change (see `take_change_asked`);
        nothing is used up."""
        found = await self.db.fetchval(
            "SELECT COUNT(*) FROM approvals WHERE user_id = $1 AND change_asked_at IS NOT NULL"
            " AND status = 'pending' AND expires_at > $2", user_id, at)
        return bool(found)

    async def take_change_asked(self, user_id: str, at: datetime) -> ApprovalRequest | None:
        """The request whose change this user was last asked for, still pending; the ask is
        used up (only the message right after the question is read as the change)."""
        async with self.db.transaction() as tx:
            row = await tx.fetchrow(
                "SELECT * FROM approvals WHERE user_id = $1 AND change_asked_at IS NOT NULL"
                " ORDER BY change_asked_at DESC, seq DESC LIMIT 1", user_id)
            await tx.execute("UPDATE approvals SET change_asked_at = NULL WHERE user_id = $1"
                             " AND change_asked_at IS NOT NULL", user_id)
        if row is None or row["status"] != "pending" or row["expires_at"] <= at:
            return None
        return _approval(row)

    async def finish_rejected(self, approval_id: str, result: str) -> None:
        """Record what the requester's conversation should hear of a rejection."""
        await self.db.execute("UPDATE approvals SET result = $2 WHERE id = $1"
                              " AND status = 'rejected'", approval_id, result)

    async def begin_execution(self, approval_id: str, at: datetime) -> bool:
        """approved -> executing: whoever wins this runs the action; nobody else ever will.
        The winner holds the execution's lease and renews it (`renew_lease`) while it runs."""
        return await self.db.execute(
            "UPDATE approvals SET status = 'executing', executed_at = $2, lease_until = $3"
            " WHERE id = $1 AND status = 'approved'", approval_id, at, at + self.lease) == 1

    async def renew_lease(self, approval_id: str, at: datetime) -> bool:
        """The execution is still alive. False: it is no longer ours (it was settled as
        interrupted), and the caller must stop the action."""
        return await self.db.execute(
            "UPDATE approvals SET lease_until = $2 WHERE id = $1 AND status = 'executing'",
            approval_id, at + self.lease) == 1

    async def finish(self, approval_id: str, status: ApprovalStatus, result: str, *,
                     effect_pending: bool = False) -> bool:
        """executing -> executed | refused | failed | unknown. False when the request was
        settled meanwhile (its lease lapsed and it was reported as interrupted).
        `effect_pending`: the action handed its effect to a durable record that settles later
        (a message in the outbox): `follow` it (bot.approvals.effects)."""
        assert status in OUTCOMES
        return await self.db.execute(
            "UPDATE approvals SET status = $2, result = $3, lease_until = NULL,"
            " effect_pending = $4 WHERE id = $1 AND status = 'executing'",
            approval_id, status.value, result, int(effect_pending)) == 1

    async def effects_pending(self, user_id: str | None = None) -> list[ApprovalRequest]:
        """Executed requests whose effect has not settled yet (one user's, or everyone's)."""
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE status = 'executed' AND effect_pending = 1"
            " AND ($1 = '' OR user_id = $1) ORDER BY created_at, seq, id", user_id or "")
        return [_approval(r) for r in rows]

    async def effect_settled(self, approval_id: str, status: ApprovalStatus,
                             result: str | None = None) -> bool:
        """The effect settled: executed stays executed (done), or becomes failed | unknown,
        with what the conversation hears now (it joins their next turn: not reported yet).
        Once: False when another process settled it first."""
        assert status in (ApprovalStatus.EXECUTED, ApprovalStatus.FAILED, ApprovalStatus.UNKNOWN)
        if status is ApprovalStatus.EXECUTED:
            return await self.db.execute(
                "UPDATE approvals SET effect_pending = 0 WHERE id = $1 AND status = 'executed'"
                " AND effect_pending = 1", approval_id) == 1
        return await self.db.execute(
            "UPDATE approvals SET status = $2, result = $3, effect_pending = 0, reported = 0"
            " WHERE id = $1 AND status = 'executed' AND effect_pending = 1",
            approval_id, status.value, result) == 1

    async def retry_of(self, approval_id: str) -> ApprovalRequest | None:
        """The request that offers this one again (or replaced it with an edit)."""
        row = await self.db.fetchrow("SELECT * FROM approvals WHERE replaces = $1"
                                     " ORDER BY created_at, seq LIMIT 1", approval_id)
        return _approval(row) if row else None

    async def recent_outcomes(self, user_id: str, since: datetime,
                              statuses: Sequence[ApprovalStatus], limit: int = 5
                              ) -> list[ApprovalRequest]:
        """This user's requests settled as one of `statuses`, created since then, newest
        first."""
        marks = ", ".join(f"${i + 3}" for i in range(len(statuses)))
        rows = await self.db.fetch(
            f"SELECT * FROM approvals WHERE user_id = $1 AND created_at >= $2 AND status IN"
            f" ({marks}) ORDER BY created_at DESC, seq DESC LIMIT {int(limit)}",
            user_id, since, *(s.value for s in statuses))
        return [_approval(r) for r in rows]

    async def expire_due(self, at: datetime, user_id: str | None = None
                         ) -> list[ApprovalRequest]:
        """pending -> expired for every approval past its time (one user's, or everyone's);
        returns the ones this call expired (each exactly once, whoever else is sweeping)."""
        if user_id is not None and not may_hold(user_id, HOLDING.name):
            return []
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

    async def interrupt_lapsed(self, at: datetime) -> list[ApprovalRequest]:
        """approved -> interrupted (it never started) and executing -> unknown (it may have
        acted) for every request whose lease lapsed (the process that held it died). Returns
        the ones this call settled, each exactly once; none is ever run again."""
        return await self._interrupt(at, lapsed_only=True)

    async def interrupt_all(self, at: datetime) -> list[ApprovalRequest]:
        """At start-up of the only process that may own leases (SQLite): whatever is still
        approved or executing was left by a dead process, whatever its lease says."""
        return await self._interrupt(at, lapsed_only=False)

    async def _interrupt(self, at: datetime, *, lapsed_only: bool) -> list[ApprovalRequest]:
        # A NULL lease is a row from before leases existed: it has no owner either.
        lapsed = "($2 = 0 OR lease_until IS NULL OR lease_until <= $1)"
        rows = await self.db.fetch(
            "SELECT id, status FROM approvals WHERE status IN ('approved', 'executing')"
            f" AND {lapsed}", at, int(lapsed_only))
        settled = []
        for row in rows:
            began = row["status"] == "executing"
            status = ApprovalStatus.UNKNOWN if began else ApprovalStatus.INTERRUPTED
            changed = await self.db.execute(
                "UPDATE approvals SET status = $6, result = $3, lease_until = NULL"
                f" WHERE id = $4 AND status = $5 AND {lapsed}",
                at, int(lapsed_only), INTERRUPTED if began else NOT_STARTED, row["id"],
                row["status"], status.value)
            if changed:
                approval = await self.get(row["id"])
                if approval:
                    settled.append(approval)
        return settled

    async def mark_reported(self, approval_ids: list[str], q: Queries | None = None) -> None:
        """`q`: the transaction (or batch) that stores the turn that reported them."""
        if not approval_ids:
            return
        places = ", ".join(f"${i}" for i in range(1, len(approval_ids) + 1))
        await (q or self.db).execute(
            f"UPDATE approvals SET reported = 1 WHERE id IN ({places})", *approval_ids)

    async def unreported(self, user_id: str) -> list[ApprovalRequest]:
        """Settled approvals whose outcome has not reached the conversation yet."""
        if not may_hold(user_id, HOLDING.name):
            return []
        settled = ", ".join(f"'{s.value}'" for s in (ApprovalStatus.EXPIRED,
                                                      ApprovalStatus.REJECTED, *OUTCOMES))
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE user_id = $1 AND reported = 0 AND status IN"
            f" ({settled}) ORDER BY created_at, seq, id", user_id)
        return [_approval(r) for r in rows]

    async def count_by_status(self) -> dict[str, int]:
        rows = await self.db.fetch("SELECT status, COUNT(*) AS n FROM approvals GROUP BY status")
        return {r["status"]: int(r["n"]) for r in rows}

    async def list(self, user_id: str | None = None, status: ApprovalStatus | None = None,
                   limit: int = 50) -> list[ApprovalRequest]:
        rows = await self.db.fetch(
            "SELECT * FROM approvals WHERE ($1 = '' OR user_id = $1) AND ($2 = '' OR status = $2)"
            " ORDER BY created_at DESC, seq DESC, id LIMIT $3", user_id or "",
            status.value if status else "", limit)
        return [_approval(r) for r in rows]
