"""Webhooks while the database is away (bot.plumbing.spool): with Postgres stopped, a signed text,
its delivery report, a Telegram update and an event are each acknowledged and kept on this machine;
once Postgres is back each reaches its table once, with the time it arrived, and the people
are answered. And signed parameters that are not what Twilio sends are a 400, not a 500."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.app.channels import configured_channels
from bot.app.serve import build_web_app
from bot.config.channel_sections import SmsSettings, TelegramSettings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import OwnerSettings
from bot.plumbing.spool import Spool
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.helpers import said
from tests.integration.sms_harness import (
    ACCOUNT_SID,
    ALICE,
    AUTH_TOKEN,
    FROM_NUMBER,
    PUBLIC_URL,
    SmsWorld,
    sms_world,
)
from tests.servers import ThrowawayPostgres

SECRET = "spool-Secret_1"
EVENTS_TOKEN = "events-token-123"
OWNER_CHAT = 42


class World:
    def __init__(self, app, spool: Spool, server: TestServer, http: aiohttp.ClientSession,
                 twilio: FakeTwilio, tg: FakeTelegram) -> None:
        self.app, self.spool, self.server, self.http = app, spool, server, http
        self.twilio, self.tg = twilio, tg

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))

    async def text(self, body: str, sid: str) -> int:
        params = inbound_params(ALICE, body, sid=sid, to=FROM_NUMBER, account_sid=ACCOUNT_SID)
        async with await post_signed(self.http, self.url("/sms/inbound"),
                                     PUBLIC_URL + "/sms/inbound", params, AUTH_TOKEN) as resp:
            return resp.status

    async def status(self, query: str, sid: str = "SM" + "5" * 32) -> tuple[int, str]:
        params = {"MessageSid": sid, "MessageStatus": "delivered", "To": ALICE,
                  "From": FROM_NUMBER, "AccountSid": ACCOUNT_SID}
        path = f"/sms/status{query}"
        async with await post_signed(self.http, self.url(path), PUBLIC_URL + path, params,
                                     AUTH_TOKEN) as resp:
            return resp.status, await resp.text()

    async def telegram(self, update: dict) -> int:
        async with self.http.post(self.url("/telegram/webhook"), json=update, headers={
                "X-Telegram-Bot-Api-Secret-Token": SECRET}) as resp:
            return resp.status

    async def event(self, body: dict) -> int:
        async with self.http.post(self.url("/events"), json=body, headers={
                "Authorization": f"Bearer {EVENTS_TOKEN}"}) as resp:
            return resp.status


@pytest.fixture
async def world(own_postgres, app_factory, fake_llm, tmp_path) -> AsyncIterator[World]:
    # (own_postgres first: it is stopped after the app is closed)
    fake_llm.responder = lambda body: LLMReply(
        content=f"re: {said(body['messages'][-1]['content'])}")
    async with FakeTwilio(ACCOUNT_SID, AUTH_TOKEN) as twilio, FakeTelegram() as tg:
        tg.started(OWNER_CHAT)
        app = await app_factory(
            database_url=own_postgres.create_database("valet"), public_url=PUBLIC_URL,
            sms=SmsSettings(from_number=FROM_NUMBER),
            owner=OwnerSettings(telegram_ids=[str(OWNER_CHAT)]),
            access=AccessSettings(channels={"sms": ChannelAccess(policy="allowlist",
                                                                 allow=[ALICE])}),
            telegram=TelegramSettings(mode="webhook", token=TOKEN, api_url=tg.api_url,
                                      webhook_secret=SECRET, webhook_url=PUBLIC_URL))
        env = {"VALET_TWILIO_ACCOUNT_SID": ACCOUNT_SID, "VALET_TWILIO_AUTH_TOKEN": AUTH_TOKEN,
               "VALET_TWILIO_API_URL": twilio.base_url, "VALET_EVENTS_TOKEN": EVENTS_TOKEN}
        spool = Spool(tmp_path / "spool")
        channels = await configured_channels(app.settings, app, env, spool=spool)
        await app.ensure_owner()
        await app.start()
        for channel in channels:
            await channel.start()
        server = TestServer(build_web_app(app, channels, env=env, spool=spool))
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as http:
                yield World(app, spool, server, http, twilio, tg)
        finally:
            await server.close()
            for channel in channels:
                await channel.stop()
                await channel.close()


async def moved(spool: Spool, timeout: float = 30.0) -> None:
    """Until the database takes what was kept (it may still be starting up)."""
    deadline = time.monotonic() + timeout
    while spool.count():
        await spool.move_all()
        assert time.monotonic() < deadline, "the spool was never moved"
        await asyncio.sleep(0.2)


async def test_webhooks_while_postgres_is_down_are_kept_then_stored_once_and_answered(
        world: World, own_postgres: ThrowawayPostgres):
    update = {"update_id": 777, "message": {
        "message_id": 1, "date": int(time.time()), "text": "hello from telegram",
        "chat": {"id": OWNER_CHAT, "type": "private", "first_name": "Sam"},
        "from": {"id": OWNER_CHAT, "is_bot": False, "first_name": "Sam"}}}
    own_postgres.pause()
    came = world.app.clock.now()
    assert await world.text("first while down", "SM" + "1" * 32) == 200
    assert await world.text("second while down", "SM" + "2" * 32) == 200
    assert await world.status("?outbox=12345") == (200, await _twiml())
    assert await world.telegram(update) == 200
    assert await world.event({"id": "ring-9", "source": "home", "type": "door.ring"}) == 202
    assert world.spool.count() == 5
    # Sent again by an impatient sender meanwhile: kept again, stored once all the same.
    assert await world.text("first while down", "SM" + "1" * 32) == 200
    world.app.clock.advance(minutes=5)  # stored later than they came
    own_postgres.resume()

    await moved(world.spool)
    db = world.app.db
    rows = await db.fetch("SELECT channel, external_id, text, received_at FROM inbox"
                          " WHERE channel <> 'trigger' ORDER BY id")
    assert [(r["channel"], r["text"]) for r in rows] == [
        ("sms", "first while down"), ("sms", "second while down"),
        ("telegram", "hello from telegram")]
    assert [r["received_at"] for r in rows[:2]] == [came, came]  # when they came, not later
    assert await db.fetchval("SELECT delivery_status FROM sms_messages WHERE outbox_id = 12345") \
        == "delivered"
    assert await db.fetchval("SELECT COUNT(*) FROM events WHERE id = 'ring-9'") == 1
    await asyncio.wait_for(_answered(world), 30)
    assert world.twilio.bodies_to(ALICE) == ["re: first while down", "re: second while down"]
    assert world.tg.texts(OWNER_CHAT) == ["re: hello from telegram"]


async def _answered(world: World) -> None:
    while len(world.twilio.bodies_to(ALICE)) < 2 or not world.tg.texts(OWNER_CHAT):  # noqa: ASYNC110
        await asyncio.sleep(0.1)


async def _twiml() -> str:
    from channels.sms.webhook import EMPTY_TWIML

    return EMPTY_TWIML


@pytest.fixture
async def sms(app_factory) -> AsyncIterator[SmsWorld]:
    """The SMS channel alone, on SQLite."""
    world, close = await sms_world(app_factory)
    try:
        yield world
    finally:
        await close()


@pytest.mark.parametrize("query", ["?outbox=" + "9" * 50, "?outbox=abc", "", "?outbox=0",
                                   "?outbox=-5", "?outbox=" + "9" * 19])
async def test_a_signed_status_report_for_no_outbox_row_is_a_400_not_a_traceback(
        sms: SmsWorld, query: str, caplog):
    caplog.set_level(logging.WARNING)
    params = {"MessageSid": "SM" + "5" * 32, "MessageStatus": "delivered", "To": ALICE}
    path = f"/sms/status{query}"
    async with await post_signed(sms.http, sms.url(path), PUBLIC_URL + path, params,
                                 AUTH_TOKEN) as resp:
        assert (resp.status, await resp.text()) == (400, "outbox must be the id of an outbox row")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("sid", ["x", "SM" + "1" * 100, "SM 12;DROP"])
async def test_a_signed_text_without_a_twilio_message_sid_is_a_400(sms: SmsWorld, sid: str,
                                                                 caplog):
    caplog.set_level(logging.WARNING)
    assert (await sms.text("hello", sid=sid)).status == 400
    assert await sms.inbox_rows() == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
