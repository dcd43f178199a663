"""Process roles as an operator runs them: `valet serve --role web`, `--role worker` and
`--role scheduler`, each its own process on one Postgres and one Redis, with the fake Twilio,
Telegram (polled by the web process) and LLM. The web process is given an LLM address nothing
listens on: it never needs one. Everything waits on what people receive (generous bounds)."""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bot.app.database import open_database
from bot.contracts.clock import SystemClock
from persona.lines import DEFAULT
from tests.e2e.roles_harness import RoleProcess
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.helpers import said
from tests.helpers import until as wait_until
from triggers.service import Owner
from triggers.wiring import build_task_service

ALICE = "+12125550123"  # the owner, by SMS
OWNER_CHAT = 42  # and on Telegram
WAIT = 60.0
CONFIG = f"""\
memory:
  enabled: false
owner:
  phone_numbers: ['{ALICE}']
  telegram_ids: ['{OWNER_CHAT}']
triggers:
  heartbeat_seconds: 0.5
  lease_seconds: 2
"""


def responder(body: dict[str, Any]) -> Reply:
    """"slowly": a slow answer; "plan": first the clock tool (slowly), then an answer that
    names every user message after the plan's (what joined the turn); else "re: <text>"."""
    users = [str(said(m["content"])) for m in body["messages"] if m["role"] == "user"]
    last = users[-1] if users else ""
    if any(m["role"] == "tool" for m in body["messages"][-3:]):
        plan = max(i for i, text in enumerate(users) if "plan" in text)
        return Reply(content="re: " + " + ".join(users[plan:]))
    if "plan" in last:
        return Reply(tool_calls=[ToolCall("current_time", {})], delay=3.0)
    if "slowly" in last:
        return Reply(content=f"re: {last}", delay=3.0)
    return Reply(content=f"re: {last}")


def role_env(tmp_path: Path, postgres_dsn: str, redis_url: str, llm: str,
             twilio: FakeTwilio, tg: FakeTelegram) -> dict[str, str]:
    env = clean_env(tmp_path, VALET_DATABASE_URL=postgres_dsn, VALET_REDIS_URL=redis_url,
                    VALET_LLM_BASE_URL=llm, VALET_LLM_MODEL="m",
                    VALET_PUBLIC_URL="https://valet.example.com",
                    VALET_SMS_FROM_NUMBER="+15005550006",
                    VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                    VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                    VALET_TWILIO_API_URL=twilio.base_url, VALET_TELEGRAM_TOKEN=TOKEN,
                    VALET_TELEGRAM_API_URL=tg.api_url, VALET_LOG_LEVEL="INFO")
    (tmp_path / "valet.yaml").write_text(CONFIG)
    return env


# Waits as tests.helpers.until does, bounded for processes that start and stop.
until = functools.partial(wait_until, timeout=WAIT)


@asynccontextmanager
async def deployment(tmp_path: Path, postgres_dsn: str, redis_url: str, fake_llm: FakeOpenAI,
                     twilio: FakeTwilio, tg: FakeTelegram
                     ) -> AsyncIterator[dict[str, RoleProcess]]:
    env = role_env(tmp_path, postgres_dsn, redis_url, fake_llm.base_url, twilio, tg)
    status, _, err = await run_valet(["migrate"], env)
    assert status == 0, err
    unreachable = {**env, "VALET_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    procs = {"web": RoleProcess(["web"], unreachable, tmp_path / "web.log"),
             "worker": RoleProcess(["worker"], env, tmp_path / "worker.log"),
             "scheduler": RoleProcess(["scheduler"], env, tmp_path / "scheduler.log")}
    try:
        await asyncio.gather(*(p.start() for p in procs.values()))
        yield procs
    finally:
        for proc in procs.values():
            await proc.terminate()
    logs = "".join(p.log.read_text() for p in procs.values())
    assert "Traceback" not in logs, logs


async def text_alice(http: aiohttp.ClientSession, web: RoleProcess, twilio: FakeTwilio,
                     body: str, n: int) -> float:
    """A signed SMS from Alice to the web process; seconds until it was acknowledged."""
    params = inbound_params(ALICE, body, sid=f"SM{n:032d}")
    started = time.monotonic()
    async with await post_signed(http, f"{web.base}/sms/inbound",
                                 "https://valet.example.com/sms/inbound", params,
                                 twilio.auth_token) as resp:
        assert resp.status == 200, await resp.text()
    return time.monotonic() - started


async def test_a_role_other_than_all_is_refused_on_sqlite(tmp_path):
    status, _, err = await run_valet(["serve", "--role", "worker"], clean_env(tmp_path))
    assert status == 2
    assert err.strip().splitlines() == [
        "valet: --role worker needs Postgres (VALET_DATABASE_URL): SQLite serves one process, "
        "which runs every role (`valet serve` alone)"]


async def test_a_role_refuses_a_database_not_migrated(postgres_dsn, redis_url, tmp_path):
    env = clean_env(tmp_path, VALET_DATABASE_URL=postgres_dsn, VALET_REDIS_URL=redis_url,
                    VALET_LLM_BASE_URL="http://127.0.0.1:9/v1", VALET_LLM_MODEL="m")
    status, _, err = await run_valet(["serve", "--role", "web"], env)
    assert status == 2
    assert "valet migrate" in err and len(err.strip().splitlines()) == 1, err


async def test_web_worker_and_scheduler_processes_answer_texts_telegram_and_reminders(
        postgres_dsn, redis_url, fake_llm, tmp_path):
    fake_llm.responder = responder
    async with FakeTwilio() as twilio, FakeTelegram() as tg, \
            deployment(tmp_path, postgres_dsn, redis_url, fake_llm, twilio, tg) as procs, \
            aiohttp.ClientSession() as http:
        web = procs["web"]
        # A text and a Telegram message: stored by the web process, answered by the worker.
        await text_alice(http, web, twilio, "hello", 1)
        await until(lambda: twilio.bodies_to(ALICE) == ["re: hello"], "the text's answer")
        tg.user_says(OWNER_CHAT, "hi there")
        await until(lambda: tg.texts(OWNER_CHAT) == ["re: hi there"], "the Telegram answer")
        # The worker set the command menu; the web process (no command table) did not.
        assert tg.called("setMyCommands")

        # /stop reaches the turn running in the worker, from the web process.
        await text_alice(http, web, twilio, "think slowly", 2)
        await until(lambda: len(fake_llm.requests) == 3, "the slow turn's LLM call")
        await text_alice(http, web, twilio, "/stop", 3)
        await until(lambda: len(twilio.bodies_to(ALICE)) == 2, "the stopped turn's reply")
        assert twilio.bodies_to(ALICE)[1] != "re: think slowly"

        # A message sent while a turn runs in the worker joins that turn.
        await text_alice(http, web, twilio, "the plan", 4)
        await until(lambda: len(fake_llm.requests) == 4, "the next slow turn's call")
        await text_alice(http, web, twilio, "and Tuesday", 5)
        await until(lambda: len(twilio.bodies_to(ALICE)) == 3, "the steered turn's reply")
        await asyncio.sleep(1.0)
        assert twilio.bodies_to(ALICE)[2] == "re: the plan + and Tuesday"
        assert len(twilio.bodies_to(ALICE)) == 3  # answered in that turn, not one of its own

        # A reminder set in the database reaches Alice once, through the scheduler.
        db = await open_database(postgres_dsn)
        try:
            tasks = build_task_service(db, SystemClock(), lines=DEFAULT)
            task = await tasks.remind(Owner("owner", "UTC"), "stretch",
                                      datetime.now(UTC) + timedelta(seconds=1))
            # (Telegram first: the owner wrote there last.)
            await until(lambda: any("stretch" in b for b in tg.texts(OWNER_CHAT)),
                        "the reminder")
            # run-now from a shell on any machine: the scheduler runs it and says so.
            every = await tasks.schedule(Owner("owner", "UTC"), name="water",
                                         schedule="every day at 9am", executor="reminder",
                                         action={"text": "water the plants"})
            status, out, err = await run_valet(["tasks", "run-now", every.id], web.env)
            assert status == 0, err
            assert re.fullmatch(rf"ran {every.id}: \w+ \(by the scheduler\)\n", out), out
            await until(lambda: any("water the plants" in b for b in tg.texts(OWNER_CHAT)),
                        "the run-now reminder")
            rows = await db.fetchval("SELECT COUNT(*) FROM inbox WHERE status IN"
                                     " ('received', 'processing')")
        finally:
            await db.close()
        assert task.id and rows == 0

        # Every role serves its health checks and /metrics; only the web process webhooks.
        for proc in procs.values():
            async with http.get(proc.base + "/metrics") as resp:
                assert resp.status == 200, proc.roles
            async with http.post(proc.base + "/sms/inbound") as resp:
                assert (resp.status == 404) == (proc.roles != ["web"]), proc.roles
        async with http.get(procs["worker"].base + "/readyz") as resp:
            assert json.loads(await resp.text())["checks"] == {
                "database": True, "redis": True, "telegram": True, "sms": True,
                "work stream": True}
        async with http.get(procs["worker"].base + "/metrics") as resp:
            worker_metrics = await resp.text()
        async with http.get(web.base + "/metrics") as resp:
            web_metrics = await resp.text()
    assert 'valet_turns_total{stop="final_answer"}' in worker_metrics
    assert 'valet_turns_total{' not in web_metrics  # the web process ran no turn
    assert 'valet_webhook_requests_total{channel="sms",result="acknowledged"} 5.0' \
        in web_metrics
