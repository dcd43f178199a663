"""The mail outbox: every approved mail, keyed by its approval id (migration 0015).

The row is the durable effect of an approved send: the composed message's bytes, stored once
(a second store of the same approval id is a no-op and the stored bytes win), and its state:

    queued -> sending -> sent | failed | unknown        (sending -> queued on a transient error)

Every change is a compare-and-set on `status`, so two processes (or a retried decision) never
run the same attempt twice. An attempt holds a lease (`lease_until`); a `sending` row whose
lease lapsed belongs to a process that died mid-attempt: it becomes `unknown`, never sent
again on its own (the server may have taken it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from bot.db import Database, Row


class MailStatus(Enum):
    QUEUED = "queued"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"  # refused for good (5xx), or no way to send it any more
    UNKNOWN = "unknown"  # an attempt died after the message went out

    @property
    def final(self) -> bool:
        return self in (MailStatus.SENT, MailStatus.FAILED, MailStatus.UNKNOWN)


@dataclass(frozen=True)
class OutgoingMail:
    approval_id: str
    user_id: str
    sender: str
    recipients: tuple[str, ...]
    subject: str
    message: bytes
    status: MailStatus
    attempts: int
    next_attempt_at: datetime | None
    last_error: str | None
    owed: bool  # the person has not been told its outcome yet
    created_at: datetime


def _mail(row: Row) -> OutgoingMail:
    return OutgoingMail(
        approval_id=row["approval_id"], user_id=row["user_id"], sender=row["sender"],
        recipients=tuple(json.loads(row["recipients"])), subject=row["subject"],
        message=bytes(row["message"]), status=MailStatus(row["status"]),
        attempts=int(row["attempts"]), next_attempt_at=row["next_attempt_at"],
        last_error=row["last_error"], owed=bool(row["owed"]), created_at=row["created_at"])


class MailOutbox:
    def __init__(self, db: Database, *, lease: timedelta) -> None:
        self.db = db
        self.lease = lease

    async def store(self, *, approval_id: str, user_id: str, sender: str,
                    recipients: Sequence[str], subject: str, message: bytes,
                    at: datetime) -> OutgoingMail:
        """Queue the approved message once; the row already stored under this id wins."""
        await self.db.execute(
            "INSERT INTO mail_outbox (approval_id, user_id, sender, recipients, subject,"
            " message, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6,"
            " 'queued', $7, $7) ON CONFLICT (approval_id) DO NOTHING",
            approval_id, user_id, sender, json.dumps(list(recipients)), subject, message, at)
        stored = await self.get(approval_id)
        assert stored is not None  # inserted now, or before
        return stored

    async def get(self, approval_id: str) -> OutgoingMail | None:
        row = await self.db.fetchrow("SELECT * FROM mail_outbox WHERE approval_id = $1",
                                     approval_id)
        return _mail(row) if row else None

    async def claim(self, approval_id: str, at: datetime, *, any_time: bool = False
                    ) -> OutgoingMail | None:
        """queued -> sending, if it is due (or `any_time`): whoever wins makes the attempt."""
        changed = await self.db.execute(
            "UPDATE mail_outbox SET status = 'sending', attempts = attempts + 1,"
            " lease_until = $2, updated_at = $3 WHERE approval_id = $1 AND status = 'queued'"
            " AND ($4 = 1 OR next_attempt_at IS NULL OR next_attempt_at <= $3)",
            approval_id, at + self.lease, at, int(any_time))
        return await self.get(approval_id) if changed == 1 else None

    async def settle(self, approval_id: str, status: MailStatus, at: datetime,
                     detail: str | None = None) -> bool:
        """sending -> sent | failed | unknown, once."""
        assert status.final
        return await self.db.execute(
            "UPDATE mail_outbox SET status = $2, last_error = $3, lease_until = NULL,"
            " next_attempt_at = NULL, updated_at = $4 WHERE approval_id = $1"
            " AND status = 'sending'", approval_id, status.value, detail, at) == 1

    async def requeue(self, approval_id: str, at: datetime, next_attempt_at: datetime,
                      detail: str) -> bool:
        """sending -> queued: the attempt failed before anything was accepted."""
        return await self.db.execute(
            "UPDATE mail_outbox SET status = 'queued', last_error = $2, lease_until = NULL,"
            " next_attempt_at = $3, updated_at = $4 WHERE approval_id = $1"
            " AND status = 'sending'", approval_id, detail, next_attempt_at, at) == 1

    async def give_up(self, approval_id: str, at: datetime, detail: str) -> bool:
        """queued -> failed: it waited too long for a server that never answered."""
        return await self.db.execute(
            "UPDATE mail_outbox SET status = 'failed', last_error = $2, next_attempt_at = NULL,"
            " updated_at = $3 WHERE approval_id = $1 AND status = 'queued'",
            approval_id, detail, at) == 1

    async def due(self, at: datetime, *, any_time: bool = False) -> list[OutgoingMail]:
        rows = await self.db.fetch(
            "SELECT * FROM mail_outbox WHERE status = 'queued' AND ($2 = 1 OR"
            " next_attempt_at IS NULL OR next_attempt_at <= $1) ORDER BY created_at",
            at, int(any_time))
        return [_mail(r) for r in rows]

    async def abandon_sending(self, at: datetime, *, lapsed_only: bool) -> list[OutgoingMail]:
        """sending -> unknown for every attempt whose process died (its lease lapsed; or, for
        the only process that may send, any left over). Returns the ones this call settled."""
        lapsed = "($2 = 0 OR lease_until IS NULL OR lease_until <= $1)"
        rows = await self.db.fetch(
            f"SELECT approval_id FROM mail_outbox WHERE status = 'sending' AND {lapsed}",
            at, int(lapsed_only))
        settled = []
        for row in rows:
            changed = await self.db.execute(
                "UPDATE mail_outbox SET status = 'unknown', lease_until = NULL, updated_at = $1,"
                " last_error = 'the attempt was cut off: it may or may not have been accepted'"
                f" WHERE approval_id = $3 AND status = 'sending' AND {lapsed}",
                at, int(lapsed_only), row["approval_id"])
            if changed:
                mail = await self.get(row["approval_id"])
                if mail is not None:
                    settled.append(mail)
        return settled

    async def owed(self) -> list[OutgoingMail]:
        """Settled mail whose outcome its person has not heard yet."""
        rows = await self.db.fetch(
            "SELECT * FROM mail_outbox WHERE owed = 1 AND status IN ('sent', 'failed',"
            " 'unknown') ORDER BY created_at")
        return [_mail(r) for r in rows]

    async def told(self, approval_id: str) -> None:
        await self.db.execute("UPDATE mail_outbox SET owed = 0 WHERE approval_id = $1",
                              approval_id)
