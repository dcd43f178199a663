"""The whole path of one console message, side by side with the bare `openai` client.

An instant fake LLM on loopback answers every call. Per message we time:
  valet    `ConsoleChat.say`: inbox write, access, the turn (history read, request view, LLM
           call), history write, outbox, delivery through the console channel's `send`, and
           the chat's waiter resolved by that delivery (an event, not a poll);
  polled   the same path ended by `Gateway.wait_idle()` (a 10 ms poll), as the console did;
  floor    the bare client's low-level post() of the exact body Valet sent for that message
           (on the aiohttp transport Valet's client uses).
valet - floor is what Valet's durable path adds per message (goal: under 1 ms, p50). Beside
the wall times, the CPU each took in this process (the fake LLM runs here too, for both: the
difference is Valet's own), which the machine's load moves less; then where Valet's time
goes (cProfile over more messages).
The console's own part (waiting for the reply) is an event now; what remains is the turn
itself (history load, the turn's steps, journal and history writes: about 35 SQL statements
per message, and JSON encoding of the journal and the request).
"""

from __future__ import annotations

import io
import statistics
import tempfile
import time
from dataclasses import dataclass, field

import openai
from openai.types.chat import ChatCompletion

from bot.app import App
from bot.config import load_settings
from channels.console.channel import ConsoleChannel, ConsoleChat, StreamScreen
from tests.bench.profiling import profiled
from tests.bench.size import sized
from tests.bench.stats import line
from tests.fakes.fake_openai import FakeOpenAI, Reply

MESSAGES = sized(60, 5)
WARM_UP = sized(5, 1)
GOAL_MS = 1.0  # above the floor, p50 (issues 9 and 39)


async def _app(fake: FakeOpenAI, url: str) -> tuple[App, ConsoleChat]:
    settings = load_settings(None, env={
        "VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null",
        "VALET_LLM_BASE_URL": fake.base_url, "VALET_LLM_MODEL": "m", "VALET_LLM_API_KEY": "k"})
    app = await App.build(settings)
    out = io.StringIO()
    channel = ConsoleChannel(StreamScreen(out, out), lines=app.persona.lines)
    app.add_channel(channel)
    await app.start()
    return app, ConsoleChat(app.gateway, channel, now=app.clock.now)


@dataclass
class Timed:
    valet: list[float] = field(default_factory=list)  # ms, wall
    floor: list[float] = field(default_factory=list)
    valet_cpu: list[float] = field(default_factory=list)  # ms, this process's CPU
    floor_cpu: list[float] = field(default_factory=list)
    profile: list[str] = field(default_factory=list)


async def _timed(fake: FakeOpenAI, url: str, *, polled: bool) -> Timed:
    """Valet and the floor per message, interleaved: the bare post of the body Valet just
    sent runs right after it, so both see the same machine load."""
    app, chat = await _app(fake, url)
    bare = openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0,
                              http_client=openai.DefaultAioHttpClient())  # as Valet's
    timed = Timed()
    try:
        for i in range(WARM_UP):
            await chat.say(f"warm up {i}")
            await bare.post("/chat/completions", body=fake.requests[-1], cast_to=ChatCompletion)
        for i in range(MESSAGES):
            c0, t0 = time.process_time(), time.perf_counter()
            if polled:
                await app.gateway.receive(chat.message(f"question {i}"))
                await app.gateway.wait_idle()
            else:
                await chat.say(f"question {i}")
            c1, t1 = time.process_time(), time.perf_counter()
            await bare.post("/chat/completions", body=fake.requests[-1], cast_to=ChatCompletion)
            c2, t2 = time.process_time(), time.perf_counter()
            timed.valet.append((t1 - t0) * 1000)
            timed.floor.append((t2 - t1) * 1000)
            timed.valet_cpu.append((c1 - c0) * 1000)
            timed.floor_cpu.append((c2 - c1) * 1000)
        if not polled:
            async def more() -> None:
                for i in range(MESSAGES):
                    await chat.say(f"profiled {i}")

            timed.profile = await profiled(more, MESSAGES)
        return timed
    finally:
        await bare.close()
        await app.close()


async def run() -> list[str]:
    out = ["Console message, whole path (inbox, access, turn, history, outbox, delivery), "
           "SQLite, instant fake LLM"]
    async with FakeOpenAI() as fake:
        fake.responder = lambda request: Reply(content="ok", usage=(10, 1))
        with tempfile.TemporaryDirectory() as tmp:
            timed = await _timed(fake, f"sqlite:///{tmp}/a.db", polled=False)
            polled = await _timed(fake, f"sqlite:///{tmp}/b.db", polled=True)
    added = statistics.median(timed.valet) - statistics.median(timed.floor)
    cpu = statistics.median(timed.valet_cpu) - statistics.median(timed.floor_cpu)
    before = statistics.median(polled.valet) - statistics.median(polled.floor)
    out += [line("valet: say() until the reply is shown", timed.valet),
            line("floor: bare openai post() of the same bodies", timed.floor),
            line("before: ended by wait_idle() (10 ms poll)", polled.valet),
            line("valet, CPU of this process", timed.valet_cpu),
            line("floor, CPU of this process", timed.floor_cpu),
            f"  added by Valet per message (p50 valet - p50 floor): {added:.2f} ms "
            f"(goal: < {GOAL_MS:.0f} ms: {'met' if added < GOAL_MS else 'NOT MET'}), "
            f"{cpu:.2f} ms of CPU; with the old polled ending: {before:.2f} ms",
            *timed.profile]
    return out
