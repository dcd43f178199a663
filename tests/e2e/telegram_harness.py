"""The Telegram test harness: the fake Bot API server, an app on the fake LLM, and the real
python-telegram-bot between them (polling or a webhook on a local aiohttp server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web

from bot.config.channel_sections import TelegramSettings
from bot.config.sections import OwnerSettings
from bot.plumbing.request_body import BodyLimits
from channels.telegram.lease import FileLease
from channels.telegram.limiter import Limits, OutboundLimiter
from channels.telegram.service import TelegramService
from channels.telegram.updates import UpdateTries
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram

OWNER_CHAT = 42
SECRET = "s3cret-Token_1"


@dataclass
class Harness:
    tg: FakeTelegram
    app: Any
    service: TelegramService
    webhook_base: str = ""

    async def inbox_count(self) -> int:
        return int(await self.app.db.fetchval("SELECT COUNT(*) FROM inbox"))


@pytest.fixture
async def fake_tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as tg:
        yield tg


@pytest.fixture
async def start_telegram(app_factory, app_settings, fake_tg, fake_llm, tmp_path):
    started: list[tuple[TelegramService, web.AppRunner | None]] = []

    async def start(*, mode: str = "polling", clock: Any = None, limits: Limits | None = None,
                    status_delay: float = 30.0, transcription: bool = False,
                    vision: bool = False, tries: UpdateTries | None = None,
                    body_limits: BodyLimits | None = None,
                    owner_ids: tuple[str, ...] = (str(OWNER_CHAT),)) -> Harness:
        # Voice notes are heard by the app (when their turn runs), with this model.
        llm = app_settings().llm.model_copy(update={
            "transcription_model": "whisper-test" if transcription else None})
        app = await app_factory(clock=clock, owner=OwnerSettings(telegram_ids=list(owner_ids)),
                                llm=llm)
        runner = None
        webhook_base = ""
        if mode == "webhook":
            runner = web.AppRunner(web.Application())
            # The service's routes are added below, before the runner is set up.
        settings = TelegramSettings(mode=mode, token=TOKEN, api_url=fake_tg.api_url,
                                    webhook_secret=SECRET, webhook_url="https://pending")

        async def is_known(address: str) -> bool:
            return await app.identities.resolve("telegram", address) is not None

        service = TelegramService(
            settings, door=app.gateway, lines=app.persona.lines,
            menu=app.commands.menu("telegram"), owner_chats=owner_ids, is_known=is_known,
            lease=FileLease(tmp_path / "poller.lock"), hears_voice=transcription, vision=vision,
            tries=tries, body_limits=body_limits,
            limiter=OutboundLimiter(limits or Limits(per_chat_rate=50, per_chat_burst=5,
                                                     per_bot_rate=200, per_bot_burst=50)),
            status_delay=status_delay, poll_timeout=1)
        if runner is not None:
            runner.app.router.add_routes(service.routes())
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            webhook_base = f"http://127.0.0.1:{runner.addresses[0][1]}"
            settings.webhook_url = webhook_base
        app.add_channel(service.channel)
        await app.start()
        await service.start()
        started.append((service, runner))
        return Harness(fake_tg, app, service, webhook_base)

    yield start
    for service, runner in started:
        await service.stop()
        await service.close()
        if runner is not None:
            await runner.cleanup()


def bot_messages(tg: FakeTelegram, chat: int) -> list[str]:
    return [m.text for m in tg.sent(chat)]


def risky_registry(tmp_path, log: str = "") -> None:
    """send_email needs approval; valet.yaml registers it (the app reads it when built)."""
    registry = tmp_path / "risky.yaml"
    settings = f"\n    settings: {{log: {log}}}" if log else ""
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        f"    approval: always{settings}\n")
    (tmp_path / "valet.yaml").write_text(
        f"loop:\n  llm_retry_base_delay: 0.01\nagents:\n  registries: [{registry}]\n"
        "  answer_check: heuristic\nowner:\n  telegram_ids: ['42']\n")


async def prompt_with_buttons(tg: FakeTelegram, fake_llm, chat: int = OWNER_CHAT):
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {"to": "team@corp.example",
                                                              "subject": "Q3"})]))
    tg.user_says(chat, "email the team about Q3")
    await tg.wait_for(lambda: any(m.buttons for m in tg.sent(chat)))
    [prompt] = [m for m in tg.sent(chat) if m.buttons]
    return prompt, {b["text"].split()[-1]: b["callback_data"] for b in prompt.buttons}
