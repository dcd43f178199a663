"""The Telegram channel when the Bot API cannot be reached as it starts: a worker (which only
sends) marks it down without telling anyone (the process that receives tells the owner); a
webhook that arrives before the bot knows who it is is kept in the spool, answered 200, and
handled once the Bot API answers."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import web

from bot.config.channel_sections import TelegramSettings
from bot.config.sections import OwnerSettings
from bot.plumbing.spool import Spool
from channels.telegram.lease import FileLease
from channels.telegram.service import TelegramService
from tests.e2e.telegram_harness import OWNER_CHAT, SECRET, bot_messages
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.ports import free_port


class Told:
    """What a channel says of itself (bot.gateway.door.ChannelStatus), recorded."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str, bool]] = []

    async def channel_down(self, channel: str, reason: str, *, tell: bool = True) -> None:
        self.said.append(("down", reason, tell))

    def channel_up(self, channel: str) -> None:
        self.said.append(("up", "", False))


async def until(check, what: str, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.05)


def service(app, tg: FakeTelegram, tmp_path, told: Told, *, mode: str = "polling",
            spool: Spool | None = None) -> TelegramService:  # type: ignore[no-untyped-def]
    async def is_known(address: str) -> bool:
        return await app.identities.resolve("telegram", address) is not None

    settings = TelegramSettings(mode=mode, token=TOKEN, api_url=tg.api_url,
                                webhook_secret=SECRET, webhook_url="https://valet.example.com")
    made = TelegramService(settings, door=app.gateway, lines=app.persona.lines,
                           menu=app.commands.menu("telegram"), is_known=is_known,
                           lease=FileLease(tmp_path / "poller.lock"), health=told, spool=spool,
                           poll_timeout=1)
    made.reach_retry_seconds = 0.2
    return made


async def test_a_worker_marks_telegram_down_quietly_and_sets_the_menu_once_it_answers(
        app_factory, tmp_path):
    app = await app_factory()
    tg, told = FakeTelegram(port=free_port()), Told()
    worker = service(app, tg, tmp_path, told)
    try:
        await worker.prepare()  # returns: the channel is tried again in the background
        assert told.said[0][0] == "down" and told.said[0][2] is False  # nobody told from here
        assert "cannot reach the Telegram Bot API" in told.said[0][1]
        assert worker.status.startswith("down: cannot reach the Telegram Bot API")
        await tg.start()
        await until(lambda: ("up", "", False) in told.said, "the channel up again")
        await until(lambda: tg.commands, "the command menu set")
        assert worker.status == "sending (a process that does not receive)"
    finally:
        await worker.close()
        await tg.stop()
    assert tg.spec_problems == []


async def test_a_webhook_before_the_bot_reached_the_api_is_kept_and_handled_after(
        app_factory, fake_llm, tmp_path):
    fake_llm.script(Reply(content="Hello again, Sam."))
    app = await app_factory(owner=OwnerSettings(telegram_ids=[str(OWNER_CHAT)]))
    await app.start()
    tg, told = FakeTelegram(port=free_port()), Told()
    spool = Spool(tmp_path / "spool")
    receiving = service(app, tg, tmp_path, told, mode="webhook", spool=spool)
    app.add_channel(receiving.channel)
    runner = web.AppRunner(web.Application())
    runner.app.router.add_routes(receiving.routes())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/telegram/webhook"
    try:
        await receiving.start()
        assert told.said[0][0] == "down" and told.said[0][2] is True  # a receiving process
        assert not receiving.ready
        update = {"update_id": 9, "message": {
            "message_id": 1, "date": int(time.time()), "text": "are you there?",
            "chat": {"id": OWNER_CHAT, "type": "private", "first_name": "Sam"},
            "from": {"id": OWNER_CHAT, "is_bot": False, "first_name": "Sam"}}}
        async with aiohttp.ClientSession() as http, http.post(
                url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}) as resp:
            assert resp.status == 200
        assert spool.count() == 1
        assert await spool.move_all() is None  # the bot does not know who it is yet: it waits
        await tg.start()
        await until(lambda: receiving.ready, "the webhook registered")
        assert tg.webhook["url"] == "https://valet.example.com/telegram/webhook"
        assert await spool.move_all() == 1
        tg.started(OWNER_CHAT)
        await asyncio.wait_for(app.gateway.wait_idle(), 60)
        assert bot_messages(tg, OWNER_CHAT) == ["Hello again, Sam."]
    finally:
        await receiving.stop()
        await receiving.close()
        await runner.cleanup()
        await tg.stop()
    assert tg.spec_problems == []
