"""One bad update never makes the bot deaf (channels/telegram/service.py): an update that cannot
be stored is tried a few times, counted under its update id (also across a restart), then
recorded as failed with its reason, its sender told once, and everything after it goes on;
an update in a shape python-telegram-bot cannot read is given up at once; a webhook body
that is not an update gets a 4xx and one log line, never a 500 or a traceback."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

from bot.contracts.envelopes import IncomingMessage
from bot.plumbing.request_body import BodyLimits
from channels.telegram.checks import WEBHOOK_PATH
from channels.telegram.updates import UpdateTries
from persona import load_persona
from tests.e2e.telegram_harness import OWNER_CHAT, SECRET, bot_messages
from tests.fakes.fake_openai import Reply
from tests.helpers import said

UNREADABLE = load_persona("default").lines.message_unreadable
QUICK = UpdateTries(retry_seconds=0.01)


def echo(body: dict[str, Any]) -> Reply:
    return Reply(content=f"re: {said(body['messages'][-1]['content'])}")


class Poisoned:
    """The gateway's door, except that storing one message always fails."""

    def __init__(self, door: Any, text: str) -> None:
        self.door, self.text, self.tries = door, text, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.door, name)

    async def receive(self, msg: IncomingMessage) -> object:
        if msg.text == self.text:
            self.tries += 1
            raise RuntimeError("the database said no")
        return await self.door.receive(msg)


async def failed_rows(h: Any) -> list[dict[str, Any]]:
    return await h.app.db.fetch(
        "SELECT external_id, address, status, error FROM inbox WHERE status = 'failed'")


async def test_an_update_that_cannot_be_stored_is_given_up_and_everything_after_it_goes_on(
        start_telegram, fake_llm):
    fake_llm.responder = echo
    h = await start_telegram(tries=QUICK)
    door = h.service.inbound.door = Poisoned(h.app.gateway, "poison")
    poison = h.tg.user_says(OWNER_CHAT, "poison")
    h.tg.user_says(OWNER_CHAT, "after")
    h.tg.user_says(777, "hello, who are you?")  # a stranger, in another chat
    await h.tg.wait_for(lambda: "re: after" in bot_messages(h.tg, OWNER_CHAT)
                        and bot_messages(h.tg, 777), timeout=30)
    await h.app.gateway.wait_idle()
    owner_saw = [t for t in bot_messages(h.tg, OWNER_CHAT) if "wants to talk" not in t]
    assert owner_saw == [UNREADABLE, "re: after"]  # told once (and of the stranger)
    assert "code" in bot_messages(h.tg, 777)[0].lower()
    assert door.tries == 3
    [row] = await failed_rows(h)
    assert row["external_id"] == str(poison["update_id"])
    assert row["error"] == "RuntimeError: the database said no"
    tries = await h.app.db.fetchval("SELECT tries FROM inbox_tries WHERE external_id = $1",
                                    str(poison["update_id"]))
    assert tries == 3


async def test_an_update_python_telegram_bot_cannot_read_is_given_up_at_once(start_telegram,
                                                                             fake_llm):
    fake_llm.responder = echo
    h = await start_telegram(tries=QUICK)
    h.tg.user_says(OWNER_CHAT, "before")
    await h.tg.wait_for(lambda: "re: before" in bot_messages(h.tg, OWNER_CHAT))
    bad = h.tg.push("message", {"message_id": 1, "date": 1, "from": "not a user",
                                "chat": {"id": OWNER_CHAT, "type": "private"}})
    h.tg.user_says(OWNER_CHAT, "after")
    await h.tg.wait_for(lambda: "re: after" in bot_messages(h.tg, OWNER_CHAT))
    await h.app.gateway.wait_idle()
    assert bot_messages(h.tg, OWNER_CHAT) == ["re: before", UNREADABLE, "re: after"]
    [row] = await failed_rows(h)
    assert (row["external_id"], row["error"]) == (str(bad["update_id"]), "unreadable update")


async def test_the_count_of_tries_survives_a_restart(start_telegram, fake_llm):
    """Two tries failed in a process that then died: the next one is the last."""
    h = await start_telegram(mode="webhook", tries=QUICK)
    door = h.service.inbound.door = Poisoned(h.app.gateway, "poison")
    update = h.tg.user_says(OWNER_CHAT, "poison")
    for _ in range(2):
        await h.app.gateway.count_failure("telegram", str(update["update_id"]), "earlier")
    assert await h.tg.deliver_webhook(update) == 200  # given up: Telegram need not resend
    assert door.tries == 1
    assert await h.tg.deliver_webhook(update) == 200  # a resend: a duplicate, said nothing
    await h.app.gateway.wait_idle()
    assert bot_messages(h.tg, OWNER_CHAT) == [UNREADABLE]


async def test_webhook_bodies_that_are_not_updates_get_a_4xx_and_a_log_line(start_telegram,
                                                                           caplog):
    h = await start_telegram(mode="webhook")
    deep = "[" * 100 + "]" * 100
    bodies = {b"null": 400, b"[1,2]": 400, b'"text"': 400, b"not json": 400,
              b'{"update_id": "x"}': 400, b'{"message": {}}': 400,
              f'{{"update_id": 1, "a": {deep}}}'.encode(): 400,
              b'{"update_id": 1, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}': 413}
    caplog.set_level(logging.WARNING)
    async with aiohttp.ClientSession() as http:
        for body, status in bodies.items():
            async with http.post(h.webhook_base + WEBHOOK_PATH, data=body, headers={
                    "X-Telegram-Bot-Api-Secret-Token": SECRET}) as resp:
                assert resp.status == status, (body[:40], resp.status)
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == len(bodies)
    assert any("must be a JSON object, not null" in r for r in refusals)
    assert any("nested more than 32 deep" in r for r in refusals)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert await h.inbox_count() == 0


async def _raw_request(base: str, head: bytes, body: bytes, *, close: bool) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head + body)
    await writer.drain()
    if close:
        writer.close()
        return b""
    answer = await asyncio.wait_for(reader.read(1000), 20)
    writer.close()
    return answer


async def test_a_half_sent_body_is_cut_off_and_a_dropped_client_is_no_traceback(
        start_telegram, caplog):
    h = await start_telegram(mode="webhook", body_limits=BodyLimits(timeout_seconds=0.5))
    head = (f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-Telegram-Bot-Api-Secret-Token: {SECRET}\r\nContent-Length: 1000\r\n\r\n"
            ).encode()
    caplog.set_level(logging.DEBUG, logger="bot.plumbing.request_body")
    answer = await _raw_request(h.webhook_base, head, b'{"update_id": 1, ', close=False)
    assert answer.startswith(b"HTTP/1.1 408")
    await asyncio.gather(*(_raw_request(h.webhook_base, head, b'{"upd', close=True)
                           for _ in range(20)))
    await asyncio.sleep(0.5)
    gone = [r for r in caplog.records if "connection closed before" in r.getMessage()]
    assert gone and all(r.levelno == logging.DEBUG for r in gone)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert await h.inbox_count() == 0
