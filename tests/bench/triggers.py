"""Triggers: 10,000 people's morning summaries fall due in the same minute.

The LLM is an in-process stand-in that takes 300 ms, behind a bound on concurrent requests
(what a provider's rate limit imposes). Measured from the engine's tick: the time to dispatch
every run into its person's queue, to the first and the last notification sent; duplicates
(a second engine ticks at the same moment: must be 0); peak memory (max RSS growth).

Floor: the LLM alone, USERS / 500 at a time x 300 ms (what no scheduler can beat). Goal: every
summary sent within the minute they fall due in, none twice.

VALET_BENCH_TRIGGER_USERS changes the size (default 10,000).
"""

from __future__ import annotations

import asyncio
import os
import resource
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

from bot.app import App
from bot.channel import ChannelSender
from bot.config import load_settings
from bot.config.policies import AccessSettings
from bot.config.sections import TriggerSettings
from bot.contracts.channels import ChannelTraits
from bot.llm.port import LLMResponse, TokenUsage
from tests.bench.size import sized
from triggers.engine import TriggerEngine
from triggers.executors import default_executors
from triggers.model import Misfire, Task, TaskStatus, TriggerKind
from triggers.templates import MORNING_SUMMARY

USERS = int(os.environ.get("VALET_BENCH_TRIGGER_USERS", sized(10000, 50)))
GOAL_SECONDS = 60.0
LLM_SECONDS = 0.3
LLM_CONCURRENCY = 500


class BoundedSleepyLLM:
    model = "sleepy"

    def __init__(self, seconds: float, concurrency: int) -> None:
        self.seconds = seconds
        self.slots = asyncio.Semaphore(concurrency)
        self.calls = 0

    async def complete(self, messages, tools, *, on_text=None):  # type: ignore[no-untyped-def]
        async with self.slots:
            self.calls += 1
            await asyncio.sleep(self.seconds)
        return LLMResponse("Morning! Nothing due today.", [], TokenUsage(10, 5), "stop")

    async def list_models(self) -> list[str]:
        return ["sleepy"]

    async def close(self) -> None:
        return None


class CountingSender(ChannelSender):
    traits = ChannelTraits("bench", "Bench")

    def __init__(self, expected: int) -> None:
        self.times: list[float] = []
        self.addresses: Counter[str] = Counter()
        self.expected = expected
        self.done = asyncio.Event()

    async def send(self, message) -> str:  # type: ignore[no-untyped-def]
        self.times.append(time.perf_counter())
        self.addresses[message.address] += 1
        if len(self.times) >= self.expected:
            self.done.set()
        return "x"


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _setup(app: App, due: datetime) -> None:
    async with app.db.transaction() as tx:
        for i in range(USERS):
            await tx.execute("INSERT INTO users (id, display_name, timezone, is_owner,"
                             " created_at) VALUES ($1, $2, 'UTC', 0, $3)", f"u{i}", f"u{i}", due)
            await tx.execute("INSERT INTO identities (channel, address, user_id, created_at)"
                             " VALUES ('bench', $1, $2, $3)", f"user{i}", f"u{i}", due)
    store = app.triggers.engine.store
    for i in range(USERS):
        await store.add(Task(
            id=f"t{i}", user_id=f"u{i}", name="Morning summary", kind=TriggerKind.CRON,
            timezone="UTC", status=TaskStatus.ACTIVE, misfire=Misfire.CATCH_UP,
            grace_seconds=3600, action={"instruction": "morning summary"},
            cron=f"{due.minute} {due.hour} * * *", template=MORNING_SUMMARY, next_run_at=due,
            created_at=due), due)


async def _summaries(url: str, label: str) -> list[str]:
    settings = load_settings(None, env={"VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null"})
    # The engine is ticked by hand here (not at start-up), so the timing includes it.
    settings = settings.model_copy(update={"access": AccessSettings(),
                                           "rate_limit_per_minute": 0,
                                           "triggers": TriggerSettings(enabled=False)})
    llm = BoundedSleepyLLM(LLM_SECONDS, LLM_CONCURRENCY)
    app = await App.build(settings, llm=llm)
    sender = CountingSender(USERS)
    app.add_channel(sender)
    due = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(seconds=1)
    try:
        await _setup(app, due - timedelta(seconds=1))
        await app.start()
        rss0 = _rss_mb()
        # A second process's engine on the same database ticks at the same moment.
        lines = app.persona.lines
        rival = TriggerEngine(app.db, app.clock, app.gateway,
                              default_executors(app.gateway, lines=lines), lines=lines)
        t0 = time.perf_counter()
        await asyncio.gather(app.triggers.engine.tick(), rival.tick())
        dispatched = time.perf_counter() - t0
        await asyncio.wait_for(sender.done.wait(), 900)
        first, last = min(sender.times) - t0, max(sender.times) - t0
        await asyncio.sleep(0.5)  # anything extra would show up now
        await app.triggers.engine.tick()
        duplicates = sum(n - 1 for n in sender.addresses.values()) + (len(sender.times) - USERS)
        runs = await app.db.fetchval("SELECT COUNT(*) FROM trigger_runs")
        floor = -(-USERS // LLM_CONCURRENCY) * LLM_SECONDS
        met = last <= GOAL_SECONDS and duplicates == 0
        return [f"  {USERS} morning summaries due in one minute on {label}, LLM "
                f"{LLM_SECONDS * 1000:.0f} ms, {LLM_CONCURRENCY} at a time:",
                f"    dispatched into the queues in {dispatched:.2f} s; first notification "
                f"{first:.2f} s, last {last:.2f} s",
                f"    runs recorded {runs}, LLM calls {llm.calls}, duplicates {duplicates}; "
                f"peak RSS {_rss_mb():.0f} MB (+{_rss_mb() - rss0:.0f} MB while running)",
                f"    floor (the LLM alone): {floor:.1f} s; goal: the last within "
                f"{GOAL_SECONDS:.0f} s, no duplicate: {'met' if met else 'NOT MET'}"]
    finally:
        await app.close()


async def run() -> list[str]:
    out = ["Triggers (engine tick -> per-user queues -> loop -> notifications)"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await _summaries(f"sqlite:///{tmp}/t.db", "SQLite")
    return out
