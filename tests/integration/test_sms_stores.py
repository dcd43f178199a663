"""The stores SMS relies on, on SQLite and Postgres: opt-out and unreachable identities (the
identity store), delivery reports and SMS cost (the SMS channel's own store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.gateway.outbox import Lane, OutboxStore
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from channels.sms.store import SmsStore

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


async def test_opting_out_and_becoming_unreachable_are_remembered_and_undone(db):
    users = UserStore(db)
    identities = IdentityStore(db, users)
    user = await identities.create_user("sms", "+442079460000", display_name="Ann",
                                        default_timezone="UTC", at=NOW)
    assert await identities.set_opted_out("sms", "+442079460000", True, at=NOW)
    assert await identities.set_unreachable("sms", "+442079460000", True, at=NOW)
    [identity] = await identities.of_user(user.id)
    assert identity.opted_out_at == NOW and identity.unreachable_at == NOW
    await identities.set_opted_out("sms", "+442079460000", False)
    await identities.set_unreachable("sms", "+442079460000", False)
    identity = await identities.get("sms", "+442079460000")
    assert identity is not None and identity.opted_out_at is None
    assert identity.unreachable_at is None
    assert not await identities.set_opted_out("sms", "+15550000000", True, at=NOW)


async def test_delivery_reports_only_move_forward_and_cost_adds_up_per_month(db):
    outbox = OutboxStore(db)
    sms = SmsStore(db)
    users = UserStore(db)
    await users.ensure("u1", at=NOW)
    first = await outbox.enqueue(db, dedupe_key="a", user_id="u1", channel="sms",
                                 address="+1", text="hi", at=NOW, lane=Lane.URGENT)
    last_month = await outbox.enqueue(db, dedupe_key="b", user_id="u1", channel="sms",
                                      address="+1", text="old", at=NOW - timedelta(days=40),
                                      lane=Lane.URGENT)
    assert first is not None and last_month is not None
    assert await sms.record_delivery(first, "sent", None, NOW)
    assert await sms.record_delivery(first, "failed", "30003", NOW)
    assert not await sms.record_delivery(first, "delivered", None, NOW)
    row = await db.fetchrow("SELECT * FROM sms_messages WHERE outbox_id = $1", first)
    assert (row["delivery_status"], row["delivery_error"]) == ("failed", "30003")
    await sms.add_cost(first, 2, "GSM-7")
    await sms.add_cost(first, 1, "UCS-2")
    await sms.add_cost(last_month, 5, "GSM-7")
    row = await db.fetchrow("SELECT * FROM sms_messages WHERE outbox_id = $1", first)
    assert (row["segments"], row["encoding"]) == (3, "mixed")
    assert await sms.segments_since("u1", NOW.replace(day=1, hour=0)) == 3
    latest = await outbox.latest_to("sms", "+1")
    assert latest is not None and latest.id == last_month
