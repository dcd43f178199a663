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

The red team's cases of issue 44 (each beside the same run on main before it, 187ed1d):

- a blocked person's 40 texts: Ana is let in, says hi, the owner blocks her, then she sends
  20 "HELP" and 20 pictures alone: the SMS and segments she gets after the block;
- an over-allowance person's 60: with `budget.daily_usd: 0.01` Ana chats once (past it), then
  sends 30 "HELP" and 30 "/help": the SMS and segments she gets after the chat;
- two timezone moves: with `budget.daily_usd: 0.05` and about $0.02 a chat, Ana chats 5 times,
  moves to Pacific/Kiritimati, chats 5 times, moves to Etc/GMT+12, chats 5 times: the chats
  answered and what she spent (the floor: what the allowance lets through).
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
from bot.config.llm_sections import LLMSettings, ModelPrice
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import BudgetSettings, MemorySettings, OwnerSettings
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
# The red team's cases (issue 44), measured with this benchmark on main at 187ed1d, before the
# meter: SMS to Ana, their segments (timezones: also chats answered of 15, dollars spent).
BEFORE_METER = {
    "blocked": (40, 40),
    "over": (60, 120),
    "timezones": (13, 13, 10, 0.22),
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


async def _world(tmp: str, name: str, model: Any, *, policy: str, allow: list[str],
                 **more: Any) -> tuple[App, FakeTwilio, web.AppRunner, str]:
    """The app (its SMS channel closed with it), the fake Twilio, the webhooks' server;
    `more`: other settings."""
    settings = load_settings(None, env={"VALET_DATABASE_URL": f"sqlite:///{tmp}/{name}.db",
                                        "VALET_CONFIG": "/dev/null"})
    settings = settings.model_copy(update={
        "public_url": PUBLIC_URL, "sms": more.pop("sms", SmsSettings(from_number=FROM_NUMBER)),
        "owner": OwnerSettings(phone_numbers=[OWNER]), "rate_limit_per_minute": 1000,
        "memory": MemorySettings(enabled=False),  # the answer's own LLM calls only
        "access": AccessSettings(channels={"sms": ChannelAccess(policy=policy,
                                                                allow=allow)}), **more})
    twilio = await FakeTwilio("AC" + "3" * 32, "bench-token").__aenter__()
    app = await App.build(settings, llm=model)
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
                    tag: str, media: list[str] | None = None) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)
    async with aiohttp.ClientSession() as http:
        async def one(i: int, number: str) -> None:
            params = inbound_params(number, body, sid=f"SM{tag}{i:030d}",
                                    account_sid=twilio.account_sid, media=media)
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


# --- the red team's cases (issue 44) ------------------------------------------------------

PICTURE = ["https://api.twilio.com/2010-04-01/Accounts/AC/Messages/MM1/Media/ME1"]


def _to_ana(twilio: FakeTwilio, after: int = 0) -> tuple[int, int]:
    sent = [m for m in twilio.sent[after:] if m.to == ALICE]
    return len(sent), sum(m.segments for m in sent)


async def _ana(app: App, url: str, twilio: FakeTwilio) -> str:
    """Ana is let in (she says hi and is answered): her user id."""
    await _text_all(url, twilio, [ALICE], "hi", "hi")
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    user = await app.identities.resolve("sms", ALICE)
    assert user is not None
    return user.id


async def _one_by_one(app: App, url: str, twilio: FakeTwilio, bodies: list[str], tag: str,
                      media: list[str] | None = None) -> None:
    for i, body in enumerate(bodies):
        await _text_all(url, twilio, [ALICE], body, f"{tag}{i:03d}", media)
    await asyncio.wait_for(app.gateway.wait_idle(), 300)


async def _texts_after_hi(tmp: str, name: str, batches: list[tuple[list[str], str]], *,
                          block: bool = False, media: list[str] | None = None,
                          **settings: Any) -> tuple[int, int]:
    """Ana says hi (and is blocked, if asked), then sends each batch of texts (`media` with
    those tagged "pic"): the SMS and segments she gets after the hi."""
    app, twilio, runner, url = await _world(tmp, name, LongAnswer("Sure."), policy="allowlist",
                                            allow=[ALICE], **settings)
    try:
        ana = await _ana(app, url, twilio)
        if block:
            await app.users.set_blocked(ana, True)
        after = len(twilio.sent)
        for bodies, tag in batches:
            await _one_by_one(app, url, twilio, bodies, tag, media if tag == "pic" else None)
        return _to_ana(twilio, after)
    finally:
        await _close(app, twilio, runner)


async def blocked_person(tmp: str) -> list[str]:
    sms, segments = await _texts_after_hi(tmp, "blocked", [(["HELP"] * 20, "help"),
                                                            ([""] * 20, "pic")],
                                          block=True, media=PICTURE)
    was = BEFORE_METER["blocked"]
    return [f"  a blocked person's 40 texts (20 HELP, 20 pictures alone): {sms} SMS "
            f"({segments} segments); before: {was[0]} SMS ({was[1]} segments); goal 0: "
            f"{'met' if sms == 0 else 'NOT MET'}"]


async def over_budget(tmp: str) -> list[str]:
    prices = {"long": ModelPrice(input=1000, output=1000)}  # a chat: $1.25, past $0.01
    sms, segments = await _texts_after_hi(
        tmp, "over", [(["HELP", "/help"] * 30, "o")], budget=BudgetSettings(daily_usd=0.01),
        sms=SmsSettings(from_number=FROM_NUMBER, price_per_segment=0.01),
        llm=app_llm(prices))
    was = BEFORE_METER["over"]
    return [f"  an over-allowance person's 60 texts (30 HELP, 30 /help; $0.01 a day): "
            f"{sms} SMS ({segments} segments); before: {was[0]} SMS ({was[1]} segments); "
            f"goal <= 1 (the allowance notice): {'met' if sms <= 1 else 'NOT MET'}"]


async def timezone_moves(tmp: str) -> list[str]:
    # 750 output tokens at $26.67 a million: $0.02 a chat; $0.05 a day.
    prices = {"long": ModelPrice(input=0, output=26.67)}
    app, twilio, runner, url = await _world(
        tmp, "moves", LongAnswer("Sure."), policy="allowlist", allow=[ALICE],
        budget=BudgetSettings(daily_usd=0.05, check_seconds=3600),
        sms=SmsSettings(from_number=FROM_NUMBER, price_per_segment=0.0),
        llm=app_llm(prices))
    try:
        ana = await _ana(app, url, twilio)
        for n, zone in enumerate(("", "Pacific/Kiritimati", "Etc/GMT+12")):
            if zone:
                await app.users.set_timezone(ana, zone)
            await _one_by_one(app, url, twilio, [f"question {n} {i}" for i in range(5)],
                              f"tz{n}")
        answered = sum(1 for m in twilio.sent if m.to == ALICE and m.body == "Sure.") - 1
        sms, segments = _to_ana(twilio)
        spent = int(await app.db.fetchval(
            "SELECT COALESCE(SUM(llm_micros + messages_micros), 0) FROM daily_spend"
            " WHERE user_id = $1", ana) or 0) / 1_000_000
        was = BEFORE_METER["timezones"]
        return [f"  two timezone moves, 15 chats after the first ($0.02 each, $0.05 a day): "
                f"{sms} SMS ({segments} segments), {answered} answered, ${spent:.2f} spent in "
                f"all; before: {was[0]} SMS ({was[1]} segments), {was[2]} answered, "
                f"${was[3]:.2f}; goal <= $0.05 + one call: "
                f"{'met' if spent <= 0.05 + 0.03 else 'NOT MET'}"]
    finally:
        await _close(app, twilio, runner)


def app_llm(prices: dict[str, ModelPrice]) -> LLMSettings:
    base = load_settings(None, env={"VALET_CONFIG": "/dev/null"}).llm
    return base.model_copy(update={"prices": prices})


async def run() -> list[str]:
    out = ["SMS cost (SQLite, fake Twilio counting segments by Twilio's rules; 'before': main "
           "at 92c144c, before issue 35)"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await strangers(tmp)
        out += await one_long_answer(tmp)
        out.append("The red team's cases (issue 44); 'before': main at 187ed1d, before the meter")
        out += await blocked_person(tmp)
        out += await over_budget(tmp)
        out += await timezone_moves(tmp)
    return out
