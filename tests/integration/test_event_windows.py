"""Event bursts are coalesced: 300 events in 15 s for one event task are a handful of runs,
not 300 turns; every event reaches exactly one run; a redelivered event goes to the run it
went to before; a run redone after a crash reads the same events."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import TriggerSettings
from bot.contracts.clock import FakeClock
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, said, unquoted
from triggers.events import Event
from triggers.service import Owner


@pytest.fixture
async def world(db_url, app_factory):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    app = await app_factory(database_url=db_url, access=access, clock=clock,
                            rate_limit_per_minute=1000,
                            triggers=TriggerSettings(event_window_seconds=60))
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    admitted = await app.access.admit("test", "alice", "Alice", "hi", clock.now())
    assert admitted.user is not None
    task = await app.triggers.service.on_event(
        Owner(admitted.user.id, "UTC"), name="doorbell", instruction="tell me who rang",
        source="home", type="ring")
    return app, clock, sender, task


def events_asked(fake_llm) -> list[tuple[list[int], int]]:
    """Each run's turn: the events shown to the model (by number), and how many in all (the
    ones that did not fit are counted)."""
    asked = []
    for request in fake_llm.requests:
        text = said(request["messages"][-1]["content"])
        if text.startswith("[Event Trigger]"):
            lines = unquoted(text.split("\n", 1)[1].rsplit("\nTask:", 1)[0]).splitlines()
            shown = [json.loads(line)["n"] for line in lines if line.startswith("{")]
            more = [int(line.split()[1]) for line in lines if line.startswith("(and ")]
            asked.append((shown, len(shown) + sum(more)))
    return asked


async def settle(app) -> None:
    await app.triggers.bus.drain()
    await app.triggers.engine.tick()
    await asyncio.wait_for(app.gateway.wait_idle(), 20)


async def test_a_burst_is_a_few_runs_and_every_event_reaches_exactly_one(world, fake_llm):
    app, clock, sender, _task = world
    fake_llm.responder = lambda request: LLMReply(content="Someone rang.")
    for n in range(300):  # 300 events over 15 s
        await app.triggers.bus.publish(Event("home", "ring", {"n": n}, id=f"ring-{n}"))
        if n % 20 == 19:
            clock.advance(seconds=1)
            await settle(app)
    await settle(app)
    assert len(events_asked(fake_llm)) == 1  # the first at once; the rest wait for the window
    clock.advance(seconds=60)
    await settle(app)
    runs = events_asked(fake_llm)
    assert len(runs) == 2
    assert runs[0] == ([0], 1)
    shown, count = runs[1]
    # All 299 others, each once (shown in the order they arrived, as many as fit; the rest
    # counted).
    assert count == 299 and len(set(shown)) == len(shown) and set(shown) <= set(range(1, 300))
    held = await app.db.fetchval("SELECT COUNT(*) FROM trigger_events_held")
    assert held == 0  # every event went to its run, and the finished runs let them go
    assert len(sender.texts()) == 2
    # A redelivered event goes nowhere new, and a quiet window runs nothing.
    await app.triggers.bus.publish(Event("home", "ring", {"n": 5}, id="ring-5"))
    clock.advance(seconds=120)
    await settle(app)
    assert len(events_asked(fake_llm)) == 2


async def test_after_a_quiet_window_the_next_event_runs_at_once(world, fake_llm):
    app, clock, _sender, _task = world
    fake_llm.responder = lambda request: LLMReply(content="Ding.")
    await app.triggers.bus.publish(Event("home", "ring", {"n": 1}, id="a"))
    await settle(app)
    clock.advance(seconds=61)
    await app.triggers.bus.publish(Event("home", "ring", {"n": 2}, id="b"))
    await settle(app)
    assert events_asked(fake_llm) == [([1], 1), ([2], 1)]
