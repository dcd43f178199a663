"""Limits of lasting work: a paired person other than the owner cannot set up more tasks than
their limit, nor LLM tasks more often than every 15 minutes, whatever the model asks for; they
hear why, the owner hears of it once; and their triggered runs count against their rate limit
(a burst is held back and told once), while the owner stays unlimited."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import OwnerSettings, TriggerSettings
from bot.contracts.clock import FakeClock
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, incoming
from triggers.events import Event
from triggers.model import TaskStatus
from triggers.service import Owner, TaskError

MONDAY = datetime(2026, 1, 5, 9, tzinfo=UTC)


@pytest.fixture
async def world(app_factory):
    """Bob (paired, not the owner) on `test`; the owner on `test` too."""
    clock = FakeClock(MONDAY)
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["bob", "olivia"])})
    app = await app_factory(access=access, clock=clock, rate_limit_per_minute=5,
                            owner=OwnerSettings(name="Olivia"),
                            # every event its own run: here the rate limit is what holds a burst
                            triggers=TriggerSettings(max_active_tasks=3,
                                                     event_window_seconds=0))
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    owner = await app.ensure_owner()
    await app.identities.link("test", "olivia", owner.id, at=clock.now())
    admitted = await app.access.admit("test", "bob", "Bob", "hi", clock.now())
    assert admitted.user is not None
    return app, admitted.user, owner, sender


async def idle(app) -> None:
    await asyncio.wait_for(app.gateway.wait_idle(), 60)


def results(fake_llm) -> list[str]:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def test_forty_every_minute_tasks_in_one_turn_are_all_refused_as_too_often(
        world, fake_llm):
    app, bob, _owner, sender = world
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("create_scheduled_task", {
            "instruction": f"check thing {i}", "schedule": "* * * * *"}) for i in range(40)]),
        LLMReply(content="I can't run those every minute."))
    await app.gateway.receive(incoming("check these 40 things every minute", address="bob"))
    await idle(app)
    said = results(fake_llm)
    assert len(said) == 40 and all("too often" in r and "every 15 minutes" in r for r in said)
    assert await app.triggers.service.store.of_user(bob.id) == []
    assert sender.texts("bob") == ["I can't run those every minute."]
    # The owner hears of it once, however many calls were refused.
    [notice] = sender.texts("olivia")
    assert notice.startswith("Bob asked for more than their budget allows: too often")


async def test_the_task_cap_holds_and_resuming_counts_too(world, fake_llm):
    app, bob, _owner, sender = world
    service = app.triggers.service
    me = Owner(bob.id, "UTC")
    made = [await service.schedule(me, name=f"t{i}", schedule="every 2 hours",
                                   instruction="look") for i in range(3)]
    with pytest.raises(TaskError) as refused:
        await service.schedule(me, name="one more", schedule="every 2 hours", instruction="x")
    assert "too many tasks: 3 are set up and the limit is 3" in str(refused.value)
    await service.pause(bob.id, made[0].id)
    extra = await service.schedule(me, name="fits now", schedule="every 2 hours",
                                   instruction="y")
    with pytest.raises(TaskError):
        await service.resume(bob.id, made[0].id)  # it would be the fourth
    assert (await service.own(bob.id, made[0].id)).status is TaskStatus.PAUSED
    await service.delete(bob.id, extra.id)
    await service.resume(bob.id, made[0].id)
    # A plain reminder needs no LLM: it is limited by the count only, not by the interval.
    await service.delete(bob.id, made[1].id)
    await service.remind(me, "stretch", MONDAY.replace(hour=10))
    await idle(app)
    assert len(sender.texts("olivia")) == 1  # one notice a day per person and limit


async def test_the_owner_has_no_limit_by_default(world):
    app, _bob, owner, _sender = world
    service = app.triggers.service
    for i in range(5):
        await service.schedule(Owner(owner.id, "UTC"), name=f"o{i}",
                               schedule="* * * * *", instruction="look")
    assert len(await service.store.of_user(owner.id)) == 5


async def test_a_burst_of_triggered_runs_counts_against_the_rate_limit_and_is_told_once(
        world, fake_llm):
    app, bob, _owner, sender = world
    await app.triggers.service.on_event(
        Owner(bob.id, "UTC"), name="alerts", instruction="tell me", source="home",
        type="alarm")
    fake_llm.responder = lambda request: LLMReply(content="Alarm!")
    for i in range(12):
        await app.triggers.bus.publish(Event("home", "alarm", {"n": i}, id=f"a{i}"))
    await app.triggers.bus.drain()
    await idle(app)
    texts = sender.texts("bob")
    assert texts.count("Alarm!") == 5  # the rate limit: 5 a minute
    assert texts.count(app.persona.lines.trigger_rate_limited) == 1
    assert len(fake_llm.requests) == 5
