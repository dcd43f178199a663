"""Process roles on Postgres and Redis (issue [scale]): what separating the web process from the
workers buys, and what several workers do.

  webhook ack   signed POST /sms/inbound at 200/s (open loop, from a second process, as
                tests/bench/sms_webhook.py sends them) to a `valet serve --role web` process,
                while two `--role worker` processes run every message as a full turn (a fake
                LLM over HTTP that takes 300 ms) and send the reply to the fake Twilio. Floor,
                same run: the web process alone (no worker running).
  1,000 users   each sends a message at once (stored and announced by an in-process web
                front), the LLM takes 300 ms (an in-process stand-in, as tests/bench/gateway.py);
                replies/s with 1 worker process and with 2.
  takeover      20 people's messages claimed by a worker, which is then killed -9: seconds
                until another worker (LLM 0.3 s) has answered every one of them. Floor, same
                run: the same 20 answered by a live worker from the claim.

Floors as said above (the 1,000 users: one worker process is the floor of two); goals: ack
p99 < 50 ms with full turns in worker processes; 1,000 replies/s with 2 workers; takeover
< 10 s.

Everything shares this machine's cores (Postgres, Redis, the processes, the fakes, the load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.channel import ChannelSender
from bot.contracts.channels import ChannelTraits
from tests.bench.size import sized
from tests.bench.stats import pct
from tests.servers import ThrowawayPostgres, ThrowawayRedis, find_pg_bin, find_redis_server

ROOT = Path(__file__).resolve().parents[2]
USERS = sized(1000, 20)
RATE = int(os.environ.get("VALET_BENCH_SMS_RATE", sized(200, 20)))
SECONDS = sized(5, 1)
SENDERS = sized(100, 10)  # tests/bench/sms_webhook.py's senders and signing
CLAIMED = sized(20, 3)  # messages a killed worker holds
GOAL_ACK_P99_MS = 50.0
GOAL_TAKEOVER_S = 10.0
PUBLIC_URL = "https://valet.example.com"


def _env(dsn: str, redis: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VALET_", "OPENAI_"))}
    env.update({"VALET_DATABASE_URL": dsn, "VALET_REDIS_URL": redis, "PYTHONPATH": str(ROOT),
                "VALET_LOG_LEVEL": "ERROR", **extra})
    return env


async def _migrate(env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "migrate", env=env,
                                                cwd=ROOT, stdout=subprocess.DEVNULL)
    assert await proc.wait() == 0


async def _until(check: Any, timeout: float = 300.0, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError("the benchmark never got there")
        await asyncio.sleep(every)


# --- worker processes with an in-process LLM stand-in ------------------------------------------


async def _worker_main(dsn: str, redis: str, llm_seconds: float) -> None:
    from bot.app import App
    from bot.app.roles import Roles
    from bot.config import load_settings
    from tests.bench.gateway import SleepyLLM

    settings = _bench_settings(load_settings(None, env=_env(dsn, redis,
                                                           VALET_CONFIG="/dev/null")))
    app = await App.build(settings, llm=SleepyLLM(llm_seconds), roles=Roles.of(["worker"]),
                          serving=True, migrate="check")
    app.add_channel(_NullSender())  # type: ignore[arg-type]
    await app.start()
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await app.close()


def _bench_settings(settings: Any) -> Any:
    from bot.config.policies import AccessSettings, ChannelAccess

    allow = [f"user{i}" for i in range(USERS)]
    return settings.model_copy(update={
        "access": AccessSettings(channels={"bench": ChannelAccess(policy="allowlist",
                                                                   allow=allow)}),
        "rate_limit_per_minute": 0})


class _NullSender(ChannelSender):
    traits = ChannelTraits("bench", "Bench")

    async def send(self, message: Any) -> str:
        return "x"


async def _start_worker(dsn: str, redis: str, llm_seconds: float
                        ) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench.roles", "--worker", dsn, redis, str(llm_seconds),
        cwd=ROOT, stdout=subprocess.PIPE, env=_env(dsn, redis))
    assert proc.stdout is not None
    assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"ready"
    return proc


async def _stop(procs: list[asyncio.subprocess.Process]) -> None:
    for proc in procs:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()


async def _front(dsn: str, redis: str) -> Any:
    from bot.app.front import Front
    from bot.config import load_settings

    settings = _bench_settings(load_settings(None, env=_env(dsn, redis,
                                                           VALET_CONFIG="/dev/null")))
    return await Front.build(settings)


def _msg(address: str, tag: str) -> Any:
    from bot.contracts.envelopes import IncomingMessage

    return IncomingMessage(channel="bench", address=address, external_id=f"{address}-{tag}",
                           text="hello", received_at=datetime.now(UTC))


async def _many_users(dsn: str, redis: str, workers: int) -> str:
    front = await _front(dsn, redis)
    procs = [await _start_worker(dsn, redis, 0.3) for _ in range(workers)]
    try:
        db = front.db
        before = int(await db.fetchval("SELECT COUNT(*) FROM outbox WHERE status = 'sent'"))
        tag = f"w{workers}"
        t0 = time.perf_counter()
        await asyncio.gather(*(front.gateway.receive(_msg(f"user{i}", tag))
                               for i in range(USERS)))
        stored = time.perf_counter() - t0

        async def answered() -> bool:
            sent = await db.fetchval("SELECT COUNT(*) FROM outbox WHERE status = 'sent'")
            return int(sent) - before >= USERS

        await _until(answered)
        wall = time.perf_counter() - t0
        floor = " (the floor)" if workers == 1 else ""
        return (f"  {USERS} users at once, {workers} worker process{'es' if workers > 1 else ''}"
                f"{floor}: {USERS / wall:7.1f} replies/s (all answered in {wall:.2f} s; stored "
                f"and announced in {stored:.2f} s)")
    finally:
        await _stop(procs)
        await front.close()


async def _takeover(dsn: str, redis: str) -> list[str]:
    """CLAIMED people's messages claimed by one worker; a second worker is up. Killed: the first
    worker's LLM never answers in time (60 s) and it is killed -9 once it holds them all: the
    clock runs from the kill until the second worker has answered every one. Floor: the first
    worker is alive with a 0.3 s LLM: the clock runs from the claim."""
    front = await _front(dsn, redis)
    db = front.db
    out = []
    try:
        for killed in (False, True):
            tag = f"t{int(killed)}"
            first = await _start_worker(dsn, redis, 60.0 if killed else 0.3)
            await asyncio.gather(*(front.gateway.receive(_msg(f"user{i}", tag))
                                   for i in range(CLAIMED)))

            async def claimed() -> bool:
                n = await db.fetchval("SELECT COUNT(*) FROM inbox WHERE status = 'processing'")
                return int(n) == CLAIMED

            async def answered(tag: str = tag) -> bool:
                n = await db.fetchval(
                    "SELECT COUNT(*) FROM outbox WHERE status = 'sent' AND dedupe_key IN"
                    " (SELECT 'reply:' || id FROM inbox WHERE external_id LIKE $1)",
                    f"%-{tag}")
                return int(n) == CLAIMED

            await _until(claimed, every=0.01)
            procs = [first]
            if killed:
                procs.append(await _start_worker(dsn, redis, 0.3))
                first.send_signal(signal.SIGKILL)
                await first.wait()
            t0 = time.perf_counter()
            await _until(answered, every=0.02)
            took = time.perf_counter() - t0
            await _stop(procs)
            how = "worker killed -9, another answers" if killed else "worker alive (floor)"
            since = "kill" if killed else "claim"
            goal = "" if not killed else (
                f"; goal < {GOAL_TAKEOVER_S:.0f} s: "
                f"{'met' if took < GOAL_TAKEOVER_S else 'NOT MET'}")
            out.append(f"  {CLAIMED} claimed messages (LLM 0.3 s), {how}: all answered "
                       f"{took:5.2f} s after the {since}{goal}")
    finally:
        await front.close()
    return out


# --- webhook acknowledgement: real `valet serve --role` processes ---------------------------


async def _webhook_ack(dsn: str, redis: str, tmp: Path) -> list[str]:
    from tests.bench.sms_webhook import SID, TOKEN, _number, _twilio_process
    from tests.fakes.fake_openai import FakeOpenAI, Reply

    allow = ", ".join(f"'{_number(i)}'" for i in range(SENDERS))
    (tmp / "valet.yaml").write_text(
        "memory:\n  enabled: false\nrate_limit_per_minute: 100000\n"
        f"access:\n  channels:\n    sms:\n      policy: allowlist\n      allow: [{allow}]\n")
    twilio, twilio_url = await _twilio_process()
    out = []
    async with FakeOpenAI() as llm:
        llm.responder = lambda body: Reply(content="ok", delay=0.3)
        env = _env(dsn, redis, VALET_CONFIG=str(tmp / "valet.yaml"),
                   VALET_LLM_BASE_URL=llm.base_url, VALET_LLM_MODEL="m",
                   VALET_PUBLIC_URL=PUBLIC_URL, VALET_SMS_FROM_NUMBER="+15005550006",
                   VALET_TWILIO_ACCOUNT_SID=SID, VALET_TWILIO_AUTH_TOKEN=TOKEN,
                   VALET_TWILIO_API_URL=twilio_url)
        from tests.e2e.roles_harness import RoleProcess

        web = RoleProcess(["web"], env, tmp / "web.log")
        workers = [RoleProcess(["worker"], env, tmp / f"worker{n}.log") for n in (1, 2)]
        try:
            await asyncio.gather(web.start(), *(w.start() for w in workers))
            out.append(await _load(web, "web + 2 workers (full turns)", dsn))
            for w in workers:
                await w.terminate()
            out.append(await _load(web, "web alone (floor)", dsn))
        finally:
            for proc in (web, *workers):
                await proc.kill()
            twilio.terminate()
            await twilio.wait()
    return out


async def _load(web: Any, label: str, dsn: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench.sms_webhook", "--load", f"{web.base}/sms/inbound",
        "--rate", str(RATE), "--seconds", str(SECONDS), stdout=subprocess.PIPE, cwd=ROOT)
    raw, _ = await proc.communicate()
    result = json.loads(raw)
    times = result["latencies_ms"]
    p99 = pct(times, 99)
    return (f"  {label:<30} {result['rate']:6.1f} signed req/s over {SECONDS} s "
            f"(n={len(times)}, non-200: {result['errors']}): ack p50 {pct(times, 50):6.2f} ms, "
            f"p99 {p99:6.2f} ms, max {max(times):6.1f} ms (goal p99 < {GOAL_ACK_P99_MS:.0f} ms: "
            f"{'met' if p99 < GOAL_ACK_P99_MS else 'NOT MET'})")


async def run() -> list[str]:
    if find_pg_bin() is None or find_redis_server() is None:
        return ["Process roles: skipped (no Postgres or Redis server binaries)"]
    out = ["Process roles (Postgres + Redis; every process on this machine's 2 cores)"]
    pg = ThrowawayPostgres().start()
    redis = ThrowawayRedis().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dsn = pg.create_database("bench_roles_web")
            await _migrate(_env(dsn, redis.url, VALET_CONFIG="/dev/null"))
            out.append(f"Webhook acknowledgement (signed POST /sms/inbound at {RATE}/s; goal "
                       "p99 < 50 ms with full turns in worker processes)")
            out += await _webhook_ack(dsn, redis.url, Path(tmp))
        out.append(f"Replies/s, {USERS} users at once, LLM 300 ms (goal: 1,000/s with 2 "
                   "workers)")
        for workers in (1, 2):
            dsn = pg.create_database(f"bench_roles_{workers}")
            await _migrate(_env(dsn, redis.url_for(workers), VALET_CONFIG="/dev/null"))
            out.append(await _many_users(dsn, redis.url_for(workers), workers))
        out.append("Takeover: a killed worker's claimed messages answered by another "
                   "(goal < 10 s)")
        dsn = pg.create_database("bench_roles_takeover")
        await _migrate(_env(dsn, redis.url_for(3), VALET_CONFIG="/dev/null"))
        out += await _takeover(dsn, redis.url_for(3))
    finally:
        redis.stop()
        pg.stop()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", nargs=3, metavar=("DSN", "REDIS", "LLM_SECONDS"))
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_worker_main(args.worker[0], args.worker[1], float(args.worker[2])))
    else:
        import logging

        logging.basicConfig(level=logging.ERROR)
        for text in asyncio.run(run()):
            print(text, flush=True)
