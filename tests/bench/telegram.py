"""Telegram: the real python-telegram-bot against the fake Bot API server, the real gateway.

  A button press's answer while 50 other users' turns run (LLM 300 ms): time from the update
      reaching the (fake) Bot API to answerCallbackQuery arriving there. The presses carry data
      the adapter cannot read, so the adapter answers them itself; a valid press is answered
      by the gateway (issue 9), on the same inbound path.
  1,000 updates from 100 chats in one burst, instant LLM: time until all are answered and the
      messages per second sent, against Telegram's 30/s per bot (the limiter's target).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bot.app import App
from bot.config import TelegramSettings, load_settings
from bot.config.policies import AccessSettings, ChannelAccess
from channels.telegram.lease import FileLease
from channels.telegram.service import TelegramService
from tests.bench.gateway import SleepyLLM
from tests.bench.stats import line
from tests.fakes.fake_telegram import TOKEN, FakeTelegram

CHATS = 100


async def _start(tmp: str, tg: FakeTelegram, llm_seconds: float, chats: int
                 ) -> tuple[App, TelegramService]:
    settings = load_settings(None, env={"VALET_DATABASE_URL": f"sqlite:///{tmp}/tg.db",
                                        "VALET_CONFIG": "/dev/null"})
    allow = [str(1000 + i) for i in range(chats)]
    settings = settings.model_copy(update={
        "access": AccessSettings(channels={"telegram": ChannelAccess(policy="allowlist",
                                                                      allow=allow)}),
        "rate_limit_per_minute": 0})
    app = await App.build(settings, llm=SleepyLLM(llm_seconds))
    return app, await serve_telegram(app, tg, tmp)


async def serve_telegram(app: App, tg: FakeTelegram, tmp: str, door: Any = None
                         ) -> TelegramService:
    """The real Telegram channel on the fake Bot API, polling, for `app` (started here);
    `door`: what receives its updates instead of the gateway (a bench's wrapper)."""
    async def is_known(address: str) -> bool:
        return await app.identities.resolve("telegram", address) is not None

    service = TelegramService(TelegramSettings(token=TOKEN, api_url=tg.api_url),
                              door=door or app.gateway, lines=app.persona.lines,
                              menu=app.commands.menu("telegram"), is_known=is_known,
                              lease=FileLease(Path(tmp) / "poller.lock"), poll_timeout=1)
    app.add_channel(service.channel)
    await app.start()
    await service.start()
    return service


async def stop_telegram(app: App, service: TelegramService) -> None:
    await service.stop()
    await service.close()
    await app.close()


async def _button_latency() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeTelegram() as tg:
            app, service = await _start(tmp, tg, 0.3, 51)
            try:
                for i in range(51):  # everyone writes once: identities exist
                    tg.user_says(1000 + i, "hello")
                await tg.wait_for(lambda: len(tg.sent()) >= 51, timeout=60)
                presser = 1050
                anchor = tg.sent(presser)[-1].message_id
                latencies = []
                for _round in range(20):
                    for i in range(50):  # 50 other users' turns are running
                        tg.user_says(1000 + i, "again")
                    await asyncio.sleep(0.05)
                    before = len(tg.called("answerCallbackQuery"))
                    pushed = time.monotonic()
                    tg.user_presses(presser, anchor, "stale-button")
                    await tg.wait_for(
                        lambda b=before: len(tg.called("answerCallbackQuery")) > b, timeout=30)
                    latencies.append((tg.called("answerCallbackQuery")[-1].at - pushed) * 1000)
                    await app.gateway.wait_idle()
                return [line("button press answered, 50 turns running", latencies)]
            finally:
                await stop_telegram(app, service)


async def _burst() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeTelegram() as tg:
            app, service = await _start(tmp, tg, 0.0, CHATS)
            try:
                for i in range(CHATS):
                    tg.user_says(1000 + i, "hello")
                await tg.wait_for(lambda: len(tg.sent()) >= CHATS, timeout=120)
                already = len(tg.sent())
                t0 = time.monotonic()
                for n in range(10):
                    for i in range(CHATS):
                        tg.user_says(1000 + i, f"message {n}")
                await tg.wait_for(lambda: len(tg.sent()) >= already + 10 * CHATS, timeout=300)
                wall = time.monotonic() - t0
                sends = [c.at for c in tg.called("sendMessage")][already:]
                peak = max(sum(1 for t in sends if s <= t < s + 1) for s in sends)
                return [f"  1,000 updates from {CHATS} chats: all answered in {wall:.1f} s, "
                        f"{1000 / wall:.1f} messages/s (limit 30/s; busiest second {peak})"]
            finally:
                await stop_telegram(app, service)


async def run() -> list[str]:
    return ["Telegram (python-telegram-bot against the fake Bot API)",
            *await _button_latency(), *await _burst()]
