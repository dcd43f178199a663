"""The whole path of one console message, side by side with the bare `openai` client.

An instant fake LLM on loopback answers every call. Per message we time:
  valet    `ConsoleChat.say`: inbox write, access, the turn (history read, request view, LLM
           call), history write, outbox, delivery through the console channel's `send`, and
           the chat's waiter resolved by that delivery (an event, not a poll);
  polled   the same path ended by `Gateway.wait_idle()` (a 10 ms poll), as the console did;
  floor    the bare client's low-level post() of the exact body Valet sent for that message.
valet - floor is what Valet's durable path adds per message (issue 9's target: under 1 ms).
The console's own part (waiting for the reply) is an event now; what remains is the turn
itself (history load, the turn's steps, journal and history writes: about 35 SQL statements
per message, and JSON encoding of the journal and the request).
"""

from __future__ import annotations

import io
import statistics
import tempfile
import time

import openai
from openai.types.chat import ChatCompletion

from bot.app import App
from bot.config import load_settings
from channels.console import ConsoleChannel, ConsoleChat, StreamScreen
from tests.bench.stats import line
from tests.fakes.fake_openai import FakeOpenAI, Reply

MESSAGES = 60
WARM_UP = 5


async def _app(fake: FakeOpenAI, url: str) -> tuple[App, ConsoleChat]:
    settings = load_settings(None, env={
        "VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null",
        "VALET_LLM_BASE_URL": fake.base_url, "VALET_LLM_MODEL": "m", "VALET_LLM_API_KEY": "k"})
    app = await App.build(settings)
    out = io.StringIO()
    channel = ConsoleChannel(StreamScreen(out, out))
    app.add_channel(channel)
    await app.start()
    return app, ConsoleChat(app.gateway, channel, now=app.clock.now)


async def _valet(fake: FakeOpenAI, url: str, *, polled: bool) -> tuple[list[float], list[dict]]:
    app, chat = await _app(fake, url)
    try:
        for i in range(WARM_UP):
            await chat.say(f"warm up {i}")
        fake.requests.clear()
        times = []
        for i in range(MESSAGES):
            t0 = time.perf_counter()
            if polled:
                await app.gateway.receive(chat.message(f"question {i}"))
                await app.gateway.wait_idle()
            else:
                await chat.say(f"question {i}")
            times.append((time.perf_counter() - t0) * 1000)
        return times, list(fake.requests)
    finally:
        await app.close()


async def _floor(fake: FakeOpenAI, bodies: list[dict]) -> list[float]:
    bare = openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    try:
        for body in bodies[:WARM_UP]:
            await bare.post("/chat/completions", body=body, cast_to=ChatCompletion)
        times = []
        for body in bodies:
            t0 = time.perf_counter()
            await bare.post("/chat/completions", body=body, cast_to=ChatCompletion)
            times.append((time.perf_counter() - t0) * 1000)
        return times
    finally:
        await bare.close()


async def run() -> list[str]:
    out = ["Console message, whole path (inbox, access, turn, history, outbox, delivery), "
           "SQLite, instant fake LLM"]
    async with FakeOpenAI() as fake:
        fake.responder = lambda request: Reply(content="ok", usage=(10, 1))
        with tempfile.TemporaryDirectory() as tmp:
            valet, bodies = await _valet(fake, f"sqlite:///{tmp}/a.db", polled=False)
            polled, _ = await _valet(fake, f"sqlite:///{tmp}/b.db", polled=True)
        floor = await _floor(fake, bodies)
    added = statistics.median(valet) - statistics.median(floor)
    out += [line("valet: say() until the reply is shown", valet),
            line("valet, ended by wait_idle() (10 ms poll)", polled),
            line("floor: bare openai post() of the same bodies", floor),
            f"  added by Valet per message (p50 valet - p50 floor): {added:.2f} ms "
            f"(target < 1 ms; the polled ending added "
            f"{statistics.median(polled) - statistics.median(floor):.2f} ms)"]
    return out
