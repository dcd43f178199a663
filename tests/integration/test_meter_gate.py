"""The meter (bot/meter, issue 44) in the app: a free channel's messages pass it too (a blocked
person gets nothing, a door reply of a kind goes once a while, the allowance is not theirs to
hold); a turn is checked before each LLM call, in its middle too: the call that would pass the
allowance is not made, the message waits, and it goes on from where it stopped once the owner
raises the allowance; nothing reaches Twilio that the meter did not let out."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.channel import PermanentSendError
from bot.config.channel_sections import SmsSettings
from bot.config.sections import BudgetSettings
from bot.contracts.envelopes import Notification, OutboundMessage
from bot.gateway.budget import raise_today
from bot.meter.ledger import Ledger
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.sms_harness import ALICE, FROM_NUMBER, sms_world
from tests.integration.test_budget_waits import priced_app, say


@pytest.fixture
async def world(app_factory):  # type: ignore[no-untyped-def]
    world, close = await sms_world(app_factory)
    yield world
    await close()


async def alice(app):  # type: ignore[no-untyped-def]
    user = await app.identities.resolve("test", "alice")
    assert user is not None
    return user


async def test_a_free_channel_passes_the_meter_blocked_people_and_door_replies_alike(
        app_factory, app_settings, fake_llm):
    app, sender = await priced_app(app_factory, app_settings)
    fake_llm.script(Reply(content="Hello.", usage=(10, 10)))
    await say(app, "hi")
    ana = await alice(app)
    for i in range(3):  # a door reply of a kind: at most once per sms.door_reply_minutes
        await app.outbound.answer_directly("test", "alice", "Help text.", dedupe_key=f"h{i}",
                                           user_id=ana.id, kind="door:help")
    await app.gateway.wait_idle()
    assert sender.texts("alice") == ["Hello.", "Help text."]
    app.clock.advance(minutes=11)
    await app.outbound.answer_directly("test", "alice", "Help text.", dedupe_key="h4",
                                       user_id=ana.id, kind="door:help")
    await app.gateway.wait_idle()
    assert sender.texts("alice")[-1] == "Help text." and len(sender.texts("alice")) == 3
    await app.users.set_blocked(ana.id, True)
    await app.outbound.answer_directly("test", "alice", "Anything.", dedupe_key="b1",
                                       user_id=ana.id)
    await app.gateway.wait_idle()
    assert len(sender.texts("alice")) == 3
    rows = await app.db.fetch("SELECT status, last_error FROM outbox WHERE dedupe_key = 'b1'")
    assert [(r["status"], r["last_error"]) for r in rows] == \
        [("dead", "not sent: the person is blocked")]


async def test_a_turn_is_stopped_before_the_call_that_would_pass_the_allowance_and_goes_on(
        app_factory, app_settings, fake_llm):
    # $0.20 a day; each call about $0.15 at worst. The turn's first call ($0.1501) asks for a
    # tool; the second would pass the budget: not made, the message waits.
    app, sender = await priced_app(app_factory, app_settings,
                                   budget=BudgetSettings(daily_usd=0.20))
    fake_llm.script(Reply(tool_calls=[ToolCall("current_time", {})], usage=(100, 100)),
                    Reply(content="It is late.", usage=(100, 100)))
    await say(app, "what time is it, and then some")
    assert fake_llm.calls == 1
    assert sender.texts("alice") == [app.persona.lines.budget_reached]
    ana = await alice(app)
    spent = await Ledger(app.db).window(ana.id, app.clock.now())
    assert spent.total == 150_100 and spent.refused > 50_000
    await raise_today(app.budget.spending, app.budget.budget, ana, app.clock.now())
    assert await app.release_held() == [ana.id]
    await app.gateway.wait_idle()
    assert sender.texts("alice")[-1] == "It is late."
    assert fake_llm.calls == 2  # the first call's answer came from the journal


async def test_the_sms_sender_sends_nothing_the_meter_did_not_let_out(world):
    with pytest.raises(PermanentSendError, match="not let out by the meter"):
        await world.channel.sender.send(OutboundMessage(501, None, "sms", ALICE, "hi"))
    assert world.twilio.sent == []
    await world.send(OutboundMessage(502, None, "sms", ALICE, "hi"))
    assert [m.body for m in world.twilio.sent] == ["hi"]
    sent = await Ledger(world.app.db).sent("sms")
    assert (sent.parts, sent.segments) == (1, 1)


async def test_a_reminder_at_the_allowance_waits_for_the_24_hours_and_a_help_is_not_sent(
        app_factory):
    world, close = await sms_world(
        app_factory, sms=SmsSettings(from_number=FROM_NUMBER, price_per_segment=0.01),
        budget=BudgetSettings(daily_usd=0.02))
    try:
        app = world.app
        now = app.clock.now()
        user = await app.identities.create_user("sms", ALICE, display_name="Ann",
                                                default_timezone="UTC", at=now)
        await Ledger(app.db).cost(user.id, now, llm=20_000)  # at the budget
        await app.outbound.notify(Notification(user.id, "Reminder: the dentist.", "r1"))
        await app.outbound.answer_directly("sms", ALICE, "Help.", dedupe_key="h1",
                                           user_id=user.id, kind="door:help")
        await app.outbound.deliverer.deliver_due()
        assert world.twilio.sent == []
        rows = {r["dedupe_key"]: r for r in await app.db.fetch("SELECT * FROM outbox")}
        assert rows["r1"]["status"] == "pending" and "waits" in rows["r1"]["last_error"]
        assert rows["h1"]["status"] == "dead" and "allowance" in rows["h1"]["last_error"]
        assert rows["r1"]["next_attempt_at"] == now + timedelta(hours=24)
        app.clock.advance(hours=24, seconds=1)
        await app.outbound.deliverer.deliver_due()
        assert world.replies() == ["Reminder: the dentist."]
    finally:
        await close()
