"""`POST /events` on `valet serve`: only a caller with the events token gets an event in, and
that event starts the person's task."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.clock import FakeClock
from bot.text.untrusted import quote_untrusted
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, said
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
        await asyncio.wait_for(app.gateway.wait_idle(), 60)
        assert sender.texts() == ["Someone rang the doorbell: it is the courier."]
        asked = said(fake_llm.requests[0]["messages"][-1]["content"])
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
        await asyncio.wait_for(app.gateway.wait_idle(), 60)
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


async def test_an_event_is_stored_before_the_202_and_a_resend_is_stored_once(app_factory,
                                                                             fake_llm):
    app, client, _ = await served(app_factory)
    await app.triggers.stop()  # nothing dispatches: the 202 alone must mean "stored"
    event = {"id": "ring-9", "source": "home", "type": "door.ring", "data": {"who": "Ana"}}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        resp = await client.post("/hooks/events", json=event, headers=headers)
        assert resp.status == 202 and await resp.json() == {"id": "ring-9"}
        [row] = await app.db.fetch("SELECT id, status, data FROM events")
        assert (row["id"], row["status"]) == ("ring-9", "received")
        assert json.loads(row["data"]) == {"who": "Ana"}
        again = await client.post("/hooks/events", json=event, headers=headers)
        assert again.status == 202
        assert await again.json() == {"id": "ring-9", "duplicate": True}
        assert await app.db.fetchval("SELECT COUNT(*) FROM events") == 1
    finally:
        await client.close()


async def test_bodies_that_are_too_big_too_deep_or_not_objects_get_a_4xx_with_the_reason(
        app_factory, caplog):
    app, client, _ = await served(app_factory)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    deep = '{"source": "a", "type": "b", "data": ' + '{"x": ' * 100 + "1" + "}" * 101
    big = '{"source": "a", "type": "b", "data": {"pad": "' + "x" * 1_900_000 + '"}}'
    cases = {"null": (400, "must be a JSON object, not null"),
             "[1, 2]": (400, "must be a JSON object, not an array"),
             deep: (400, "nested more than 32 deep"),
             big: (413, "at most 65536 are accepted"),
             '{"source": "a"}': (400, "'type' must be a short name")}
    caplog.set_level(logging.WARNING)
    try:
        for body, (status, reason) in cases.items():
            resp = await client.post("/hooks/events", data=body, headers=headers)
            assert resp.status == status, body[:30]
            assert reason in (await resp.json())["error"]
        assert await app.db.fetchval("SELECT COUNT(*) FROM events") == 0
    finally:
        await client.close()
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == len(cases)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
