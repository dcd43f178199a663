"""Two real `valet serve` processes on one Postgres share the trigger schedule: one leads, each
reminder reaches the person once (by SMS, through the fake Twilio), and when the leader is
killed -9 the other takes the lease over once it runs out, catches up what fell due in the
gap and delivers what comes after.

Short lease settings (a 0.5 s heartbeat, a 2 s lease) keep it to seconds; nothing here
asserts a duration: it waits for what the person receives, with generous timeouts."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.app.database import open_database
from bot.contracts.clock import SystemClock
from bot.db import Database
from persona.lines import DEFAULT
from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_twilio import FakeTwilio
from tests.ports import free_port
from triggers.lease import SCHEDULER_LEASE
from triggers.service import Owner, TaskService
from triggers.wiring import build_task_service

ALICE = "+12125550123"
CONFIG = f"""\
memory:
  enabled: false
owner:
  phone_numbers: ['{ALICE}']
triggers:
  heartbeat_seconds: 0.5
  lease_seconds: 2
"""
WAIT = 30.0  # generous: two cores shared with other test runs


@asynccontextmanager
async def reminders(dsn: str) -> AsyncIterator[tuple[Database, TaskService]]:
    """The task service over the shared database, with no engine running in this process."""
    db = await open_database(dsn)
    try:
        yield db, build_task_service(db, SystemClock(), lines=DEFAULT)
    finally:
        await db.close()


async def serve(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    port = free_port()
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": str(port)},
            cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=err)
    await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
    return proc


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait (a bounded, generous time) for something to happen: not an assertion on speed."""
    for _ in range(int(WAIT / 0.1)):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


async def leader_pid(db: Database) -> int | None:
    """The lease holder is "host:pid:random" (triggers.engine.default_holder)."""
    row = await db.fetchrow("SELECT holder, expires_at FROM trigger_leases WHERE name = $1",
                            SCHEDULER_LEASE)
    return int(row["holder"].split(":")[1]) if row else None


async def lease_expiry(db: Database) -> datetime:
    return await db.fetchval("SELECT expires_at FROM trigger_leases WHERE name = $1",
                             SCHEDULER_LEASE)


async def quiet(db: Database) -> bool:
    """Every recorded run finished and every queued message handed to Twilio."""
    firing = await db.fetchval("SELECT COUNT(*) FROM trigger_runs WHERE outcome = 'firing'")
    unsent = await db.fetchval("SELECT COUNT(*) FROM outbox WHERE status <> 'sent'")
    return firing == 0 and unsent == 0


async def test_two_serve_processes_deliver_each_reminder_once_and_survive_the_leaders_death(
        postgres_dsn, fake_llm, tmp_path):
    async with FakeTwilio() as twilio, reminders(postgres_dsn) as (db, tasks):
        env = clean_env(tmp_path, VALET_DATABASE_URL=postgres_dsn,
                        VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_PUBLIC_URL="https://valet.example.com",
                        VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url, VALET_LOG_LEVEL="INFO")
        (tmp_path / "valet.yaml").write_text(CONFIG)
        procs = list(await asyncio.gather(serve(env, tmp_path / "a.log"),
                                          serve(env, tmp_path / "b.log")))
        try:
            await _story(db, tasks, twilio, procs)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        logs = "".join(p.read_text() for p in sorted(tmp_path.glob("*.log")))
        assert "Traceback" not in logs, logs
    assert fake_llm.requests == []  # a plain reminder costs no LLM call


async def _story(db: Database, tasks: TaskService, twilio: FakeTwilio,
                 procs: list[asyncio.subprocess.Process]) -> None:
    owner = Owner("owner", "UTC")

    async def remind(text: str, seconds: float) -> str:
        due = datetime.now(UTC) + timedelta(seconds=seconds)
        return (await tasks.remind(owner, text, due)).id

    async def received(count: int) -> None:
        await until(lambda: _true(len(twilio.sent) >= count), f"{count} messages to Alice")

    # Both processes are up; one of them leads.
    pids = {p.pid: p for p in procs}
    await until(lambda: _in(leader_pid(db), pids), "one of the two processes leads")

    # Reminders due over the next seconds reach Alice once each, while both processes run.
    ids = [await remind("stretch", 1), await remind("drink water", 2)]
    await received(2)
    await until(lambda: quiet(db), "the runs finished and the messages went out")
    assert all(p.returncode is None for p in procs)

    # kill -9 the leader: its lease is not given back, it just stops being renewed.
    leader = pids[await leader_pid(db)]
    survivor = next(p for p in procs if p is not leader)
    held_until = await lease_expiry(db)
    leader.send_signal(signal.SIGKILL)
    await leader.wait()
    in_the_gap = await remind("call mom", 0.3)  # due while nobody may lead
    await until(lambda: _is(leader_pid(db), survivor.pid), "the other process takes over")
    ids += [in_the_gap, await remind("water the plants", 1)]  # due after the takeover
    await received(4)
    await until(lambda: quiet(db), "the runs finished and the messages went out")
    await asyncio.sleep(1.5)  # a few more of the survivor's heartbeats: nothing fires again

    # What Alice received: each reminder once, in order (by SMS without the emoji: one
    # would make each a UCS-2 message, 70 characters a segment).
    assert [(m.to, m.body) for m in twilio.sent] == [
        (ALICE, "Reminder: stretch"), (ALICE, "Reminder: drink water"),
        (ALICE, "Reminder: call mom"), (ALICE, "Reminder: water the plants")]
    # The runs table: one run per task, at its scheduled time, sent.
    runs = await db.fetch("SELECT task_id, run_key, scheduled_at, fired_at, outcome"
                          " FROM trigger_runs ORDER BY scheduled_at")
    assert [(r["task_id"], r["outcome"]) for r in runs] == [(i, "sent") for i in ids]
    # The reminder due in the gap waited for the dead leader's lease to run out (no one ran
    # it meanwhile), then was caught up: once, within its grace.
    gap_run = next(r for r in runs if r["task_id"] == in_the_gap)
    assert gap_run["fired_at"] >= held_until
    statuses = await db.fetch("SELECT status FROM trigger_tasks")
    assert {r["status"] for r in statuses} == {"completed"}

    survivor.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(survivor.wait(), WAIT) == 0


async def _true(value: bool) -> bool:
    return value


async def _in(pid: Awaitable[int | None], pids: dict[int, Any]) -> bool:
    return await pid in pids


async def _is(pid: Awaitable[int | None], expected: int | None) -> bool:
    return await pid == expected
