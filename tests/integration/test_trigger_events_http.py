"""`POST /events` on `valet serve`: only a caller with the events token gets an event in, and
that event starts the person's task."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.clock import FakeClock
from bot.gateway.access import AccessSettings, ChannelAccess
from bot.untrusted import quote_untrusted
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender
from triggers.service import Owner

TOKEN = "s3cret-events-token"


async def served(app_factory):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    app = await app_factory(access=access, clock=clock)
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    alice = (await app.access.admit("test", "alice", "Alice", "hi", clock.now())).user
    await app.triggers.service.on_event(Owner(alice.id, "UTC"), name="door",
                                        instruction="tell me who is at the door",
                                        source="home", type="door.*")
    web_app = web.Application()
    web_app.add_subapp("/hooks/", app.triggers.http_app({"VALET_EVENTS_TOKEN": TOKEN}))
    client = TestClient(TestServer(web_app))
    await client.start_server()
    return app, client, sender


async def test_an_event_posted_with_the_token_starts_the_persons_task(app_factory, fake_llm):
    app, client, sender = await served(app_factory)
    fake_llm.script(LLMReply(content="Someone rang the doorbell: it is the courier."))
    try:
        resp = await client.post("/hooks/events", json={
            "id": "ring-1", "source": "home", "type": "door.ring", "data": {"who": "courier"}},
            headers={"Authorization": f"Bearer {TOKEN}"})
        assert resp.status == 202 and (await resp.json())["id"] == "ring-1"
        await app.triggers.bus.drain()
        await asyncio.wait_for(app.gateway.wait_idle(), 10)
        assert sender.texts() == ["Someone rang the doorbell: it is the courier."]
        asked = fake_llm.requests[0]["messages"][-1]["content"]
        assert asked.startswith("[Event Trigger] home/door.ring:\n")
        # The event's data reaches the model quoted as data, whoever posted it.
        assert quote_untrusted('{"who": "courier"}', note="the event's data, as home sent it") \
            in asked
    finally:
        await client.close()


async def test_without_the_right_token_the_answer_is_401_and_nothing_runs(app_factory,
                                                                          fake_llm):
    app, client, sender = await served(app_factory)
    event = {"source": "home", "type": "door.ring", "data": {}}
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            resp = await client.post("/hooks/events", json=event, headers=headers)
            assert resp.status == 401
        bad = await client.post("/hooks/events", data="not json",
                                headers={"Authorization": f"Bearer {TOKEN}"})
        assert bad.status == 400
        await app.triggers.bus.drain()
        await asyncio.wait_for(app.gateway.wait_idle(), 10)
        assert sender.texts() == [] and fake_llm.calls == 0
        assert await app.db.fetchval("SELECT COUNT(*) FROM trigger_runs") == 0
    finally:
        await client.close()


async def test_with_no_token_configured_every_post_is_refused(app_factory):
    app, served_client, _ = await served(app_factory)
    await served_client.close()
    web_app = web.Application()
    web_app.add_subapp("/x/", app.triggers.http_app({}))
    async with TestClient(TestServer(web_app)) as client:
        resp = await client.post("/x/events", json={"source": "a", "type": "b"},
                                 headers={"Authorization": "Bearer "})
        assert resp.status == 401
