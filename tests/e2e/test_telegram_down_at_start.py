"""The Telegram Bot API out of reach when `valet serve` starts: the process runs on, Telegram
is a channel marked down (/readyz names it, the owner is told by SMS), SMS works meanwhile, and
once the Bot API answers the channel starts by itself and its messages are answered."""

from __future__ import annotations

import functools
import json
from typing import Any

import aiohttp

from tests.e2e.roles_harness import RoleProcess
from tests.e2e.test_console_pipe import clean_env
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.helpers import said
from tests.helpers import until as wait_until
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
OWNER_PHONE = "+12125550123"
OWNER_CHAT = 42


# Waits as tests.helpers.until does, bounded for processes that start and stop.
until = functools.partial(wait_until, timeout=60.0)


async def readyz(http: aiohttp.ClientSession, proc: RoleProcess) -> tuple[int, dict[str, Any]]:
    async with http.get(proc.base + "/readyz") as resp:
        return resp.status, json.loads(await resp.text())


async def test_the_bot_api_out_of_reach_at_start_is_a_channel_down_then_up_not_an_exit(
        fake_llm, tmp_path):
    fake_llm.responder = lambda body: Reply(
        content=f"re: {said(body['messages'][-1]['content'])}")
    port = free_port()
    tg = FakeTelegram(port=port)  # not listening yet: the Bot API cannot be reached
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
                        VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url)
        (tmp_path / "valet.yaml").write_text(
            f"memory:\n  enabled: false\nowner:\n  phone_numbers: ['{OWNER_PHONE}']\n"
            f"  telegram_ids: ['{OWNER_CHAT}']\n")
        proc = RoleProcess(["all"], env, tmp_path / "serve.log")
        try:
            await proc.start(ready=False)

            async def telegram_named_down() -> bool:
                status, ready = await readyz(http, proc)
                # SMS may come up after Telegram is named (its start is its own): both.
                return status == 503 and "telegram" in ready["problems"] \
                    and ready["checks"].get("sms") is True

            await until(telegram_named_down, "/readyz naming Telegram, SMS up")
            _, ready = await readyz(http, proc)
            assert ready["checks"]["telegram"] is False and ready["checks"]["sms"] is True
            assert "cannot reach the Telegram Bot API" in ready["problems"]["telegram"]
            # The owner hears it on the channel that works, once.
            await until(lambda: any(b.startswith("telegram stopped working")
                                    for b in twilio.bodies_to(OWNER_PHONE)), "the owner told")
            # SMS works meanwhile.
            params = inbound_params(OWNER_PHONE, "still there?", sid="SM" + "7" * 32)
            async with await post_signed(http, f"{proc.base}/sms/inbound",
                                         f"{PUBLIC}/sms/inbound", params,
                                         twilio.auth_token) as resp:
                assert resp.status == 200
            await until(lambda: "re: still there?" in twilio.bodies_to(OWNER_PHONE),
                        "the text answered while Telegram is down")
            assert proc.alive

            await tg.start()  # the Bot API answers again
            await until(lambda: _ready(http, proc), "/readyz ready once Telegram answers")
            tg.user_says(OWNER_CHAT, "hello again")
            await until(lambda: tg.texts(OWNER_CHAT) == ["re: hello again"],
                        "the Telegram message answered")
            told = [b for b in twilio.bodies_to(OWNER_PHONE) if "stopped working" in b]
            assert len(told) == 1
        finally:
            status = await proc.terminate()
            await tg.stop()
        assert status == 0
        log = proc.log.read_text()
        assert "Traceback" not in log, log
        assert "telegram: the Bot API answers again: the channel works" in log


async def _ready(http: aiohttp.ClientSession, proc: RoleProcess) -> bool:
    status, _ = await readyz(http, proc)
    return status == 200
