"""The gateway: what the durable path costs per message, and how it holds up under many users.

  receive()   inbox write + access check + dispatch, per message (SQLite and Postgres)
  1,000 users each send a message at once (each their first: the person is created); the LLM
              takes 300 ms. Throughput, the latency each person sees above those 300 ms
              (p50/p99), and this process's CPU per reply, SQLite and Postgres.

The LLM here is an in-process stand-in that sleeps 300 ms: this measures the gateway and the
database, not an HTTP client's connection pool (the openai client's pool would be the limit).

Known people send RUNS rounds; each figure is the median of those rounds (this process's CPU
moves with the machine's load less than wall time, but it moves). Then one more round under
cProfile: where the time goes, its top entries by own time.

Floors, same run and database: receive() beside one bare INSERT through the same Database
port; the CPU per reply beside the same number of tasks that each wait the LLM's 300 ms and
make one database round trip (what any asyncio service pays per reply). Goals: a known
person's plain turn at most 0.5 ms of CPU on SQLite and 0.8 ms on Postgres; Postgres at least
as many replies/s as SQLite.

`--workers N` (python -m tests.bench --workers 2 gateway): the processes that run turns.
One is this process; more need the web/worker process roles (issue [scale] items 1-2): until
they exist the bench says so instead of measuring.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.app import App
from bot.channel import ChannelSender
from bot.config import load_settings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.channels import ChannelTraits
from bot.contracts.envelopes import IncomingMessage
from bot.llm.port import LLMResponse, TokenUsage
from tests.bench.profiling import profiled
from tests.bench.size import sized
from tests.bench.stats import line, pct
from tests.servers import ThrowawayPostgres, find_pg_bin

USERS = sized(1000, 20)
RUNS = sized(3, 1)  # rounds of known people: their median is the figure
LLM_SECONDS = 0.3
GOAL_CPU_MS = {"SQLite": 0.5, "Postgres": 0.8}  # a known person's plain turn


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


class TimingSender(ChannelSender):
    traits = ChannelTraits("bench", "Bench")

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
        await app.db.execute("CREATE TABLE bench_floor (k TEXT PRIMARY KEY, body TEXT)")
        floor = []
        for n in range(200):
            t0 = time.perf_counter()
            await app.db.execute("INSERT INTO bench_floor (k, body) VALUES ($1, $2)",
                                 f"k{n}", "hello")
            floor.append((time.perf_counter() - t0) * 1000)
        return [line(f"receive() on {label}", times),
                line(f"floor: one bare INSERT on {label}", floor)]
    finally:
        await app.close()


@dataclass(frozen=True)
class AtOnce:
    label: str
    replies_per_second: float
    wall: float
    added: list[float]  # ms above the LLM's 300 ms, per person
    cpu_ms: float  # this process's CPU per reply

    def text(self) -> str:
        return (f"  {USERS} at once on {self.label}: {self.replies_per_second:6.1f} replies/s, "
                f"all answered in {self.wall:.2f} s; above the LLM's 300 ms: "
                f"p50 {pct(self.added, 50):.0f} ms, p99 {pct(self.added, 99):.0f} ms; "
                f"{self.cpu_ms:.2f} ms CPU per reply")


async def _many_users(url: str, label: str, *, workers: int = 1
                      ) -> tuple[list[str], AtOnce | None]:
    """Lines, and the known people's run."""
    if workers != 1:
        return [f"  {USERS} users at once on {label} with {workers} workers: not measured "
                "(several workers need the web/worker process roles)"], None
    app, sender = await _app(url, LLM_SECONDS)
    try:
        new = await _at_once(app, sender, 0, f"{label}, new people")  # first contact
        rounds = [await _at_once(app, sender, n, f"{label}, known people")
                  for n in range(1, RUNS + 1)]  # their next messages
        known = _median(rounds)
        floor = await _floor_cpu(app)

        async def once_more() -> None:
            await _at_once(app, sender, RUNS + 1, "profiled", settle=False)

        where = await profiled(once_more, USERS)
        await app.gateway.wait_idle()
        backend = label.split()[0]
        goal = GOAL_CPU_MS[backend]
        return [new.text(), known.text() + f" (median of {RUNS}: "
                + ", ".join(f"{r.cpu_ms:.2f}" for r in rounds) + ")",
                f"    floor: {floor:.2f} ms CPU per reply ({USERS} tasks that each wait "
                f"300 ms and make one round trip); goal for a known person <= {goal} ms: "
                f"{known.cpu_ms:.2f} ({'met' if known.cpu_ms <= goal else 'NOT MET'})",
                *where], known
    finally:
        await app.close()


def _median(rounds: list[AtOnce]) -> AtOnce:
    """The round whose CPU per reply is the median one."""
    return sorted(rounds, key=lambda r: r.cpu_ms)[len(rounds) // 2]


async def _at_once(app: App, sender: TimingSender, n: int, label: str, *,
                   settle: bool = True) -> AtOnce:
    """Every person sends their n-th message at once; `settle`: then wait until the gateway
    has nothing left to do (its 10 ms poll: not part of a profile)."""
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
    if settle:
        await app.gateway.wait_idle()
    added = [(sender.delivered[a] - sent_at[a] - LLM_SECONDS) * 1000 for a in sent_at]
    return AtOnce(label, USERS / wall, wall, added, cpu * 1000 / USERS)


async def _floor_cpu(app: App) -> float:
    """CPU per reply of the same number of tasks that only wait and touch the database once."""
    cpu = time.process_time()

    async def one(i: int) -> None:
        await asyncio.sleep(LLM_SECONDS)
        await app.db.fetchval("SELECT $1::text" if app.db.dialect == "postgres"
                              else "SELECT $1", str(i))

    await asyncio.gather(*(one(i) for i in range(USERS)))
    return (time.process_time() - cpu) * 1000 / USERS


async def run(workers: int = 1) -> list[str]:
    out = ["Gateway (inbox + access + per-user dispatch + outbox), each beside its floor"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await _receive_cost(f"sqlite:///{tmp}/a.db", "SQLite")
        lines, sqlite = await _many_users(f"sqlite:///{tmp}/b.db", "SQLite")
        out += lines
    if find_pg_bin() is None:
        return [*out, "  Postgres: skipped (no server binaries)"]
    pg = ThrowawayPostgres().start()
    try:
        out += await _receive_cost(pg.create_database("bench_a"), "Postgres")
        lines, postgres = await _many_users(pg.create_database("bench_b"), "Postgres (pool 10)")
        out += lines
        lines, _ = await _many_users(pg.create_database("bench_c") + "?pool_size=40",
                                     "Postgres (pool 40)")
        out += lines
        if workers != 1:
            out += (await _many_users(pg.create_database("bench_d"), "Postgres",
                                      workers=workers))[0]
    finally:
        pg.stop()
    if sqlite is not None and postgres is not None:
        verdict = "met" if postgres.replies_per_second >= sqlite.replies_per_second \
            else "NOT MET"
        out.append(f"  goal: Postgres (pool 10) at least as many replies/s as SQLite, known "
                   f"people: {postgres.replies_per_second:.0f} vs "
                   f"{sqlite.replies_per_second:.0f} ({verdict})")
    return out
