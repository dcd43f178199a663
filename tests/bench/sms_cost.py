"""What SMS can cost: what 1,000 strangers texting Valet make it send, and what one long answer
costs, beside the figures measured on main before issue 35 (commit 92c144c).

Everything runs in this process on SQLite: the app with its SMS channel behind a real port,
the fake Twilio REST server (it counts segments by Twilio's rules, tests/fakes/sms_segments.py)
and an LLM stand-in. The strangers' webhooks are signed as Twilio signs them; the owner has a
US number, so what Valet tells the owner about strangers goes by SMS too.

- strangers: 1,000 numbers Valet does not know (the pairing policy) text "hi" once, then the
  same 1,000 text "hi" again: the SMS and segments sent to them and to the owner.
- a 3,000-character answer: a person asks, the model answers 3,000 characters (and, asked to
  shorten it, answers the same again: the worst case), and the SMS and segments it becomes.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import aiohttp
from aiohttp import web

from bot.app import App
from bot.app.channels import served_channel
from bot.config import load_settings
from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import MemorySettings, OwnerSettings
from bot.llm.port import LLMResponse, TokenUsage
from tests.bench.size import sized
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed

PUBLIC_URL = "https://valet.example.com"
FROM_NUMBER = "+15005550006"
OWNER = "+12125550100"
ALICE = "+12125550123"
STRANGERS = sized(1000, 40)  # --quick: a few, the same rules
CONCURRENCY = 50
CAP = 10  # sms.stranger_replies_per_hour's default
MAX_SEGMENTS = 3  # sms.max_segments's default

# Measured with this benchmark on main at 92c144c (before issue 35), SQLite, this machine.
BEFORE = {
    "once": (2000, 3000, 1000),  # SMS in all, their segments, SMS of them to the owner
    "twice": (4000, 6000, 2000),  # the same, after both rounds
    "answer": (2, 21),  # SMS, segments
}


class LongAnswer:
    """An LLM stand-in whose every answer is the same 3,000 characters of prose."""

    model = "long"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    async def complete(self, messages: Any, tools: Any, *, on_text: Any = None) -> LLMResponse:
        self.calls += 1
        return LLMResponse(self.text, [], TokenUsage(500, 750), "stop")

    async def list_models(self) -> list[str]:
        return [self.model]

    async def close(self) -> None:
        return None


def long_answer(chars: int = 3000) -> str:
    """Prose of exactly `chars` characters, in sentences (the last one padded to fit)."""
    sentences = [f"Item {i}: the plan for day {i % 7 + 1} covers the morning walk, lunch "
                 f"at noon and the call with the team about the budget." for i in range(200)]
    text = ""
    for sentence in sentences:
        if len(text) + len(sentence) + 1 > chars - 40:
            break
        text = f"{text} {sentence}".strip()
    last = " That is all for this week, see you soon"
    return text + last + "." * (chars - len(text) - len(last))


async def _world(tmp: str, name: str, llm: Any, *, policy: str,
                 allow: list[str]) -> tuple[App, FakeTwilio, web.AppRunner, str]:
    """The app (its SMS channel closed with it), the fake Twilio, the webhooks' server."""
    settings = load_settings(None, env={"VALET_DATABASE_URL": f"sqlite:///{tmp}/{name}.db",
                                        "VALET_CONFIG": "/dev/null"})
    settings = settings.model_copy(update={
        "public_url": PUBLIC_URL, "sms": SmsSettings(from_number=FROM_NUMBER),
        "owner": OwnerSettings(phone_numbers=[OWNER]), "rate_limit_per_minute": 1000,
        "memory": MemorySettings(enabled=False),  # the answer's own LLM calls only
        "access": AccessSettings(channels={"sms": ChannelAccess(policy=policy,
                                                                allow=allow)})})
    twilio = await FakeTwilio("AC" + "3" * 32, "bench-token").__aenter__()
    app = await App.build(settings, llm=llm)
    channel = served_channel(app, "sms", env={
        "VALET_TWILIO_ACCOUNT_SID": twilio.account_sid,
        "VALET_TWILIO_AUTH_TOKEN": twilio.auth_token, "VALET_TWILIO_API_URL": twilio.base_url})
    app.closers.append(channel.close)
    await app.start()
    runner = web.AppRunner(channel.web_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return app, twilio, runner, f"http://127.0.0.1:{port}/sms/inbound"


async def _close(app: App, twilio: FakeTwilio, runner: web.AppRunner) -> None:
    await runner.cleanup()
    await app.close()
    await twilio.__aexit__(None, None, None)


async def _text_all(url: str, twilio: FakeTwilio, numbers: list[str], body: str,
                    tag: str) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)
    async with aiohttp.ClientSession() as http:
        async def one(i: int, number: str) -> None:
            params = inbound_params(number, body, sid=f"SM{tag}{i:030d}",
                                    account_sid=twilio.account_sid)
            async with gate:
                response = await post_signed(http, url, PUBLIC_URL + "/sms/inbound", params,
                                             twilio.auth_token)
                await response.read()
                assert response.status == 200, response.status

        await asyncio.gather(*(one(i, n) for i, n in enumerate(numbers)))


def _sent(twilio: FakeTwilio) -> tuple[int, int, int]:
    return (len(twilio.sent), twilio.segments_to(),
            sum(1 for m in twilio.sent if m.to == OWNER))


async def strangers(tmp: str) -> list[str]:
    app, twilio, runner, url = await _world(tmp, "strangers", LongAnswer(""), policy="pairing",
                                            allow=[])
    numbers = [f"+1212555{i:04d}" for i in range(1000, 1000 + STRANGERS)]
    out = []
    try:
        for round_, label in (("a", "once"), ("b", "twice")):
            await _text_all(url, twilio, numbers, "hi", round_)
            await asyncio.wait_for(app.gateway.wait_idle(), 600)
            sms, segments, owner = _sent(twilio)
            was = BEFORE[label]
            # The floor: what the settings allow strangers at most (the hourly cap of replies,
            # plus the owner's notices); the goal: no more than that, whatever they send.
            floor = CAP + 3
            out.append(f"  {STRANGERS} strangers texting {label:<5}: {sms:5d} SMS in all "
                       f"({segments} segments, {owner} SMS to the owner); before (1,000 "
                       f"strangers): {was[0]} SMS ({was[1]} segments, {was[2]} to the owner); "
                       f"floor: {CAP} replies an hour + at most 3 owner notices; goal <= "
                       f"{floor}: {'met' if sms <= floor else 'NOT MET'}")
    finally:
        await _close(app, twilio, runner)
    return out


async def one_long_answer(tmp: str) -> list[str]:
    llm = LongAnswer(long_answer())
    app, twilio, runner, url = await _world(tmp, "answer", llm, policy="allowlist",
                                            allow=[ALICE])
    try:
        await _text_all(url, twilio, [ALICE], "tell me everything about the week", "q")
        await asyncio.wait_for(app.gateway.wait_idle(), 120)
        sms, segments, _ = _sent(twilio)
        was = BEFORE["answer"]
        return [f"  a {len(llm.text):,}-character answer: {sms} SMS, {segments} segments "
                f"({llm.calls} LLM calls); before: {was[0]} SMS, {was[1]} segments; floor: 1 "
                f"SMS of 1 segment; goal <= {MAX_SEGMENTS} segments (sms.max_segments): "
                f"{'met' if segments <= MAX_SEGMENTS else 'NOT MET'}"]
    finally:
        await _close(app, twilio, runner)


async def run() -> list[str]:
    out = ["SMS cost (SQLite, fake Twilio counting segments by Twilio's rules; 'before': main "
           "at 92c144c, before issue 35)"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await strangers(tmp)
        out += await one_long_answer(tmp)
    return out
