"""The mail outbox on SQLite and Postgres: the approval id keys one message whose stored bytes
win; every attempt is a compare-and-set; an attempt whose process died is never retried."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from agents.email.outbox import MailOutbox, MailStatus

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)
LEASE = timedelta(minutes=2)


async def stored(outbox: MailOutbox, approval_id: str = "a1", message: bytes = b"first"):
    return await outbox.store(approval_id=approval_id, user_id="u1", sender="me@example.org",
                              recipients=["ana@example.com"], subject="Q3", message=message,
                              at=NOW)


async def test_a_second_store_of_the_same_approval_keeps_the_first_message(db):
    outbox = MailOutbox(db, lease=LEASE)
    first = await stored(outbox)
    again = await stored(outbox, message=b"second \x00\xff")
    assert first.message == again.message == b"first"
    assert again.status is MailStatus.QUEUED and again.owed


async def test_only_one_of_two_concurrent_claims_wins_the_attempt(db):
    outbox = MailOutbox(db, lease=LEASE)
    await stored(outbox, message=b"\x00\xff bytes kept as they are")
    claims = await asyncio.gather(*(outbox.claim("a1", NOW) for _ in range(5)))
    [won] = [c for c in claims if c is not None]
    assert won.status is MailStatus.SENDING and won.attempts == 1
    assert won.message == b"\x00\xff bytes kept as they are"
    assert await outbox.settle("a1", MailStatus.SENT, NOW)
    assert not await outbox.settle("a1", MailStatus.FAILED, NOW)  # settled once
    assert await outbox.claim("a1", NOW + timedelta(days=1), any_time=True) is None


async def test_a_requeued_mail_is_due_only_after_its_backoff(db):
    outbox = MailOutbox(db, lease=LEASE)
    await stored(outbox)
    await outbox.claim("a1", NOW)
    await outbox.requeue("a1", NOW, NOW + timedelta(seconds=30), "connection refused")
    assert await outbox.due(NOW) == []
    assert [m.approval_id for m in await outbox.due(NOW, any_time=True)] == ["a1"]
    assert [m.last_error for m in await outbox.due(NOW + timedelta(seconds=30))] == [
        "connection refused"]


async def test_an_attempt_whose_process_died_becomes_unknown_and_is_owed_to_its_person(db):
    outbox = MailOutbox(db, lease=LEASE)
    await stored(outbox)
    await outbox.claim("a1", NOW)
    assert await outbox.abandon_sending(NOW + timedelta(minutes=1), lapsed_only=True) == []
    [unknown] = await outbox.abandon_sending(NOW + timedelta(minutes=3), lapsed_only=True)
    assert unknown.status is MailStatus.UNKNOWN
    assert await outbox.claim("a1", NOW + timedelta(days=1), any_time=True) is None
    assert [m.approval_id for m in await outbox.owed()] == ["a1"]
    await outbox.told("a1")
    assert await outbox.owed() == []
