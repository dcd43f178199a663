"""The gateway: what the durable path costs per message, and how it holds up under many users.

  receive()   inbox write + access check + dispatch, per message (SQLite and Postgres)
  1,000 users each send a message at once (each their first: the person is created); the LLM
              takes 300 ms. Throughput, the latency each person sees above those 300 ms
              (p50/p99), and this process's CPU per reply, SQLite and Postgres.

The LLM here is an in-process stand-in that sleeps 300 ms: this measures the gateway and the
database, not an HTTP client's connection pool (the openai client's pool would be the limit).

`--workers N` (python -m tests.bench --workers 2 gateway): the processes that run turns.
One is this process; more need the web/worker process roles (issue [scale] items 1-2): until
they exist the bench says so instead of measuring.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from datetime import UTC, datetime

from bot.app import App
from bot.channel import ChannelFeatures
from bot.config import load_settings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.envelopes import IncomingMessage
from bot.llm.port import LLMResponse, TokenUsage
from tests.bench.stats import line, pct
from tests.servers import ThrowawayPostgres, find_pg_bin

USERS = 1000
LLM_SECONDS = 0.3


class SleepyLLM:
    model = "sleepy"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def complete(self, messages, tools, *, on_text=None):  # type: ignore[no-untyped-def]
        await asyncio.sleep(self.seconds)
        return LLMResponse("ok", [], TokenUsage(10, 1), "stop")

    async def list_models(self) -> list[str]:
        return ["sleepy"]

    async def close(self) -> None:
        return None


class TimingSender:
    name = "bench"
    features = ChannelFeatures()

    def __init__(self) -> None:
        self.delivered: dict[str, float] = {}
        self.done = asyncio.Event()
        self.expected = 0

    async def send(self, message) -> str:  # type: ignore[no-untyped-def]
        self.delivered[message.address] = time.perf_counter()
        if len(self.delivered) >= self.expected:
            self.done.set()
        return "x"


def _msg(address: str, n: int) -> IncomingMessage:
    return IncomingMessage(channel="bench", address=address, external_id=f"{address}-{n}",
                           text="hello", received_at=datetime.now(UTC))


async def _app(url: str, llm_seconds: float) -> tuple[App, TimingSender]:
    settings = load_settings(None, env={"VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null"})
    allow = [f"user{i}" for i in range(USERS)]
    settings = settings.model_copy(update={
        "access": AccessSettings(channels={"bench": ChannelAccess(policy="allowlist",
                                                                   allow=allow)}),
        "rate_limit_per_minute": 0})
    app = await App.build(settings, llm=SleepyLLM(llm_seconds))
    sender = TimingSender()
    app.add_channel(sender)
    await app.start()
    return app, sender


async def _receive_cost(url: str, label: str) -> list[str]:
    app, _ = await _app(url, 0.0)
    try:
        for i in range(20):  # create the users first: first contact is not the steady state
            await app.gateway.receive(_msg(f"user{i}", 0))
        await app.gateway.wait_idle()
        times = []
        for n in range(1, 11):
            for i in range(20):
                t0 = time.perf_counter()
                await app.gateway.receive(_msg(f"user{i}", n))
                times.append((time.perf_counter() - t0) * 1000)
            await app.gateway.wait_idle()
        return [line(f"receive() on {label}", times)]
    finally:
        await app.close()


async def _many_users(url: str, label: str, *, workers: int = 1) -> list[str]:
    if workers != 1:
        return [f"  {USERS} users at once on {label} with {workers} workers: not measured "
                "(several workers need the web/worker process roles)"]
    app, sender = await _app(url, LLM_SECONDS)
    try:
        out = []
        for n, who in ((0, "new"), (1, "known")):  # first contact, then their next message
            out.append(await _at_once(app, sender, n, f"{label}, {who} people"))
        return out
    finally:
        await app.close()


async def _at_once(app: App, sender: TimingSender, n: int, label: str) -> str:
    sender.expected, sender.delivered = USERS, {}
    sender.done.clear()
    sent_at: dict[str, float] = {}
    cpu = time.process_time()
    t0 = time.perf_counter()

    async def one(i: int) -> None:
        sent_at[f"user{i}"] = time.perf_counter()
        await app.gateway.receive(_msg(f"user{i}", n))

    await asyncio.gather(*(one(i) for i in range(USERS)))
    await asyncio.wait_for(sender.done.wait(), 300)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu
    await app.gateway.wait_idle()
    added = [(sender.delivered[a] - sent_at[a] - LLM_SECONDS) * 1000 for a in sent_at]
    return (f"  {USERS} at once on {label}: {USERS / wall:6.1f} replies/s, "
            f"all answered in {wall:.2f} s; above the LLM's 300 ms: "
            f"p50 {pct(added, 50):.0f} ms, p99 {pct(added, 99):.0f} ms; "
            f"{cpu * 1000 / USERS:.2f} ms CPU per reply")


async def run(workers: int = 1) -> list[str]:
    out = ["Gateway (inbox + access + per-user dispatch + outbox); the floor: SQLite, same run"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await _receive_cost(f"sqlite:///{tmp}/a.db", "SQLite")
        out += await _many_users(f"sqlite:///{tmp}/b.db", "SQLite")
    if find_pg_bin() is None:
        return [*out, "  Postgres: skipped (no server binaries)"]
    pg = ThrowawayPostgres().start()
    try:
        out += await _receive_cost(pg.create_database("bench_a"), "Postgres")
        out += await _many_users(pg.create_database("bench_b"), "Postgres (pool 10)")
        out += await _many_users(pg.create_database("bench_c") + "?pool_size=40",
                                 "Postgres (pool 40)")
        if workers != 1:
            out += await _many_users(pg.create_database("bench_d"), "Postgres",
                                     workers=workers)
    finally:
        pg.stop()
    return out
