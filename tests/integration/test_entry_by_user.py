"""The gateway's entry by user: a trigger's turn joins the person's queue, its reply and any
other notification reach the person where they can be reached, quiet hours respected."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.channel import PermanentSendError
from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Delivery, Notification, TriggerMessage, Urgency
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming, said

NINE_AM = datetime(2026, 1, 5, 9, tzinfo=UTC)


@pytest.fixture
async def two_channel_app(db_url, app_factory):
    """Alice is known on `test` (her preferred channel) and linked on `sms`."""

    async def make(clock: FakeClock | None = None):
        access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                                allow=["alice"])})
        app = await app_factory(database_url=db_url, access=access,
                                clock=clock or FakeClock(NINE_AM))
        test, sms = RecordingSender("test"), RecordingSender("sms")
        app.add_channel(test)
        app.add_channel(sms)
        await app.start()
        admitted = await app.access.admit("test", "alice", "Alice", "hi", app.clock.now())
        alice = admitted.user
        assert alice is not None
        await app.identities.link("sms", "+15550001111", alice.id, at=app.clock.now())
        return app, alice, test, sms

    return make


async def test_a_triggered_turn_runs_for_the_user_and_its_reply_is_a_notification(
        two_channel_app, fake_llm):
    app, alice, test, _ = await two_channel_app()
    fake_llm.script(LLMReply(content="Good morning! Sunny, 21°C."))
    run = TriggerMessage(alice.id, "[Scheduled Task] morning summary", key="t1:2026-01-05",
                         task_id="t1")
    assert await app.gateway.submit(run)
    assert not await app.gateway.submit(run)  # a duplicate fire is a no-op
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts("alice") == ["Good morning! Sunny, 21°C."]
    assert fake_llm.calls == 1
    assert said(fake_llm.requests[0]["messages"][-1]["content"]) == \
        "[Scheduled Task] morning summary"


async def test_a_triggered_turn_waits_for_the_persons_own_message_before_it(
        two_channel_app, fake_llm):
    app, alice, test, _ = await two_channel_app()
    first_started, release = asyncio.Event(), asyncio.Event()

    async def respond(body):
        last = said(body["messages"][-1]["content"])
        if last == "hello":
            first_started.set()
            await release.wait()
        return LLMReply(content=f"re: {last}")

    fake_llm.responder = respond
    await app.gateway.receive(incoming("hello", channel="test", address="alice"))
    await first_started.wait()
    await app.gateway.submit(TriggerMessage(alice.id, "[Scheduled Task] ping", "t2:1", "t2"))
    release.set()
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts("alice") == ["re: hello", "re: [Scheduled Task] ping"]


async def test_a_notification_goes_to_the_named_channel_else_the_preferred_one(
        two_channel_app):
    app, alice, test, sms = await two_channel_app()
    assert await app.outbound.notify(Notification(alice.id, "by preference", "n1")) \
        is Delivery.QUEUED
    assert await app.outbound.notify(Notification(alice.id, "by name", "n2", channel="sms")) \
        is Delivery.QUEUED
    assert await app.outbound.notify(Notification(alice.id, "again", "n2", channel="sms")) \
        is Delivery.ALREADY_QUEUED
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts() == ["by preference"]
    assert sms.texts() == ["by name"]


async def test_an_opted_out_or_unreachable_identity_gets_nothing_a_linked_one_does(
        two_channel_app):
    app, alice, test, sms = await two_channel_app()
    test.fail = [PermanentSendError("bot was blocked by the user", unreachable=True)]
    await app.outbound.notify(Notification(alice.id, "first", "n1"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts() == []
    await app.outbound.notify(Notification(alice.id, "second", "n2"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts() == [] and sms.texts() == ["second"]  # fell back to the linked number

    await app.identities.set_opted_out("sms", "+15550001111", True, at=app.clock.now())
    assert await app.outbound.notify(Notification(alice.id, "third", "n3")) \
        is Delivery.UNREACHABLE
    # Writing again makes the blocked channel reachable again (the opt-out stays).
    await app.gateway.receive(incoming("I'm back", channel="test", address="alice"))
    assert (await app.outbound.notifier.route(alice.id, None)).channel == "test"


async def test_quiet_hours_hold_a_notification_until_they_end_unless_urgent(
        two_channel_app):
    clock = FakeClock(datetime(2026, 1, 5, 23, 30, tzinfo=UTC))  # 23:30 in London
    app, alice, test, _ = await two_channel_app(clock)
    await app.users.set_timezone(alice.id, "Europe/London")
    await app.users.set_quiet_hours(alice.id, "22:00", "07:00")
    await app.outbound.notify(Notification(alice.id, "your reminder", "n1"))
    await app.outbound.notify(Notification(alice.id, "the house is on fire", "n2",
                                          urgency=Urgency.URGENT))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts() == ["the house is on fire"]
    clock.advance(hours=7, minutes=31)  # 07:01 the next morning
    app.outbound.deliverer.wake()
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert test.texts() == ["the house is on fire", "your reminder"]
