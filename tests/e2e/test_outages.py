"""What Valet stands on going away while it runs, with real `valet serve --role ...` processes
(web, worker, scheduler) on a Postgres and a Redis of this test's own, which it stops and
starts again on the same port:

- Postgres stopped for 20 s while 50 signed texts arrive: every webhook is acknowledged (kept
  in the web process's spool), and once Postgres is back every text is answered exactly once,
  in the order each person sent them;
- Redis stopped: /readyz of each process names it, and the web process says truthfully that
  nothing polls Telegram; a text sent meanwhile is answered once Redis is back.

Either way the logs carry no traceback, and at most one WARNING line a minute per dependency
about the outage in each process (the counts are printed: pytest -s)."""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app.database import open_database
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from tests.e2e.roles_harness import RoleProcess
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, sign
from tests.helpers import said
from tests.helpers import until as wait_until
from tests.servers import ThrowawayPostgres, ThrowawayRedis

pytestmark = pytest.mark.slow

PUBLIC = "https://valet.example.com"
PEOPLE, EACH = 10, 5  # 50 texts
OUTAGE_SECONDS = 20.0
WAIT = 120.0
CHAT = 4242  # a person on Telegram
# mid_turn queue: each text is answered by a turn of its own (joined to a running turn, two
# texts of one person would share one answer: counted as one here).
CONFIG = """\
memory:
  enabled: false
gateway:
  mid_turn: queue
  sweep_seconds: 1
triggers:
  heartbeat_seconds: 0.5
  lease_seconds: 2
"""


def phone_of(i: int) -> str:
    return f"+1212555{i:04d}"


def answer(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    return Reply(content=f"re: {said(last['content'])}")


async def people(dsn: str) -> None:
    db = await open_database(dsn)
    try:
        users = UserStore(db)
        identities = IdentityStore(db, users)
        now = datetime.now(UTC)
        for i in range(PEOPLE):
            await users.ensure(f"p{i}", display_name=f"P{i}", at=now)
            await identities.link("sms", phone_of(i), f"p{i}", at=now)
        await users.ensure("t", display_name="T", at=now)
        await identities.link("telegram", str(CHAT), "t", at=now)
    finally:
        await db.close()


class Deployment:
    def __init__(self, tmp_path: Path, dsn: str, redis_url: str, llm: FakeOpenAI,
                 twilio: FakeTwilio, tg: FakeTelegram) -> None:
        self.twilio, self.tg = twilio, tg
        self.env = clean_env(
            tmp_path, VALET_DATABASE_URL=dsn, VALET_REDIS_URL=redis_url,
            VALET_LLM_BASE_URL=llm.base_url, VALET_LLM_MODEL="m", VALET_PUBLIC_URL=PUBLIC,
            VALET_DATA_DIR=str(tmp_path / "data"), VALET_SMS_FROM_NUMBER="+15005550006",
            VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
            VALET_TWILIO_AUTH_TOKEN=twilio.auth_token, VALET_TWILIO_API_URL=twilio.base_url,
            VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
            VALET_LOG_LEVEL="INFO")
        (tmp_path / "valet.yaml").write_text(CONFIG)
        self.procs = {role: RoleProcess([role], self.env, tmp_path / f"{role}.log")
                      for role in ("web", "worker", "scheduler")}
        self.web = self.procs["web"]

    async def start(self, dsn: str) -> None:
        status, _, err = await run_valet(["migrate"], self.env)
        assert status == 0, err
        await people(dsn)
        await asyncio.gather(*(p.start() for p in self.procs.values()))

    async def stop(self) -> None:
        for proc in self.procs.values():
            await proc.terminate()

    async def text(self, http: aiohttp.ClientSession, i: int, body: str, sid: str) -> int:
        """A signed webhook, as Twilio sends it (once: Twilio does not retry an inbound SMS);
        the HTTP status."""
        params = inbound_params(phone_of(i), body, sid=sid)
        headers = {"X-Twilio-Signature": sign(self.twilio.auth_token, f"{PUBLIC}/sms/inbound",
                                              params)}
        async with http.post(f"{self.web.base}/sms/inbound", data=params,
                             headers=headers) as resp:
            return resp.status

    async def readyz(self, http: aiohttp.ClientSession, role: str) -> tuple[int, dict[str, Any]]:
        async with http.get(self.procs[role].base + "/readyz") as resp:
            return resp.status, json.loads(await resp.text())

    async def inboxes(self, i: int) -> str:
        """What a person received, and their inbox and outbox rows (shown on failure)."""
        db = await open_database(self.env["VALET_DATABASE_URL"])
        try:
            inbox = await db.fetch("SELECT id, external_id, text, status, error, received_at"
                                   " FROM inbox WHERE address = $1 ORDER BY id", phone_of(i))
            outbox = await db.fetch("SELECT id, dedupe_key, text, status, last_error FROM"
                                    " outbox WHERE address = $1 ORDER BY id", phone_of(i))
        finally:
            await db.close()
        return (f"received: {self.twilio.bodies_to(phone_of(i))}\ninbox: {inbox}\n"
                f"outbox: {outbox}")

    def logs(self) -> dict[str, str]:
        return {role: p.log.read_text() for role, p in self.procs.items()}


# Waits as tests.helpers.until does, bounded for processes that start and stop.
until = functools.partial(wait_until, timeout=WAIT)


def outage_lines(log: str, dependency: str) -> list[str]:
    """WARNING (or worse) lines of one process's log about this dependency's outage."""
    return [line for line in log.splitlines()
            if re.search(r" (WARNING|ERROR|CRITICAL) ", line)
            and f"{dependency} unreachable" in line]


def problems(logs: dict[str, str]) -> list[str]:
    return [f"{role}: {line}" for role, log in logs.items() for line in log.splitlines()
            if "Traceback" in line or re.search(r" (ERROR|CRITICAL) ", line)]


@pytest.fixture
async def deployment(tmp_path: Path, own_postgres: ThrowawayPostgres,
                     own_redis: ThrowawayRedis, fake_llm: FakeOpenAI
                     ) -> AsyncIterator[Deployment]:
    fake_llm.responder = answer
    dsn = own_postgres.create_database("valet")
    async with FakeTwilio() as twilio, FakeTelegram() as tg:
        tg.started(CHAT)
        deployed = Deployment(tmp_path, dsn, own_redis.url, fake_llm, twilio, tg)
        try:
            await deployed.start(dsn)
            yield deployed
        finally:
            await deployed.stop()


async def test_texts_sent_while_postgres_is_down_are_each_answered_once_after_it_returns(
        deployment: Deployment, own_postgres: ThrowawayPostgres):
    d = deployment
    async with aiohttp.ClientSession() as http:
        assert await d.text(http, 0, "before", "SM" + "b" * 32) == 200
        await until(lambda: d.twilio.bodies_to(phone_of(0)) == ["re: before"], "a first answer")

        own_postgres.pause()
        stopped = time.monotonic()
        d.tg.user_says(CHAT, "hello while the database is away")  # Telegram keeps it
        statuses = []
        for n in range(PEOPLE * EACH):
            i, j = n % PEOPLE, n // PEOPLE
            statuses.append(await d.text(http, i, f"p{i} m{j}", f"SM{i:016d}{j:016d}"))
            await asyncio.sleep((OUTAGE_SECONDS - 2) / (PEOPLE * EACH))
        status, ready = await d.readyz(http, "web")
        assert status == 503 and ready["checks"]["database"] is False, ready
        assert ready["spooled"] >= 1, ready
        spool = Path(d.env["VALET_DATA_DIR"]) / "spool"
        assert oct(spool.stat().st_mode & 0o777) == "0o700"
        assert all(oct(f.stat().st_mode & 0o777) == "0o600" for f in spool.glob("*.json"))
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - stopped)))
        own_postgres.resume()

        assert statuses == [200] * (PEOPLE * EACH)  # every one acknowledged during the outage
        for i in range(PEOPLE):
            expected = [f"re: p{i} m{j}" for j in range(EACH)]
            await until(lambda i=i, expected=expected:
                        d.twilio.bodies_to(phone_of(i))[1 if i == 0 else 0:] == expected,
                        f"p{i}'s answers, each once, in order",
                        seen=lambda i=i: d.inboxes(i))
        await until(lambda: d.tg.texts(CHAT) == ["re: hello while the database is away"],
                    "the Telegram message kept by Telegram")
        await asyncio.sleep(3.0)  # a second answer to anything would show by now
        for i in range(PEOPLE):
            assert len(d.twilio.bodies_to(phone_of(i))) == EACH + (i == 0)
        status, ready = await d.readyz(http, "web")
        assert status == 200 and ready["spooled"] == 0, ready
    logs = d.logs()
    counts = {role: len(outage_lines(log, "database")) for role, log in logs.items()}
    print(f"\ndatabase outage lines by process: {counts}")
    assert problems(logs) == []
    # 20 s of outage: one line each (a process may see it start in two minutes' windows).
    assert all(n <= 2 for n in counts.values()), counts
    assert counts["web"] >= 1


async def test_with_redis_down_readyz_names_it_and_the_pollers_state_and_nothing_is_lost(
        deployment: Deployment, own_redis: ThrowawayRedis):
    d = deployment
    async with aiohttp.ClientSession() as http:
        status, ready = await d.readyz(http, "web")
        assert status == 200 and ready["checks"]["redis"] and ready["checks"]["telegram"]

        own_redis.pause()
        stopped = time.monotonic()

        async def web_says_redis_and_telegram_down() -> bool:
            status, ready = await d.readyz(http, "web")
            checks = ready["checks"]
            return status == 503 and checks["redis"] is False and checks["telegram"] is False

        await until(web_says_redis_and_telegram_down, "the web process's /readyz", timeout=30)
        _, ready = await d.readyz(http, "web")
        assert "not polling" in ready["problems"]["telegram"], ready
        for role in ("worker", "scheduler"):
            status, ready = await d.readyz(http, role)
            assert status == 503 and ready["checks"]["redis"] is False, (role, ready)
        assert await d.text(http, 1, "while redis is away", "SM" + "r" * 32) == 200
        d.tg.user_says(CHAT, "telegram while redis is away")
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - stopped)))
        own_redis.resume()

        await until(lambda: d.twilio.bodies_to(phone_of(1)) == ["re: while redis is away"],
                    "the text's answer once Redis is back")
        await until(lambda: d.tg.texts(CHAT) == ["re: telegram while redis is away"],
                    "the Telegram message once someone polls again")
        for role in d.procs:
            await until(lambda role=role: _ready(d, http, role), f"{role} ready again")
    logs = d.logs()
    counts = {role: len(outage_lines(log, "redis")) for role, log in logs.items()}
    print(f"\nredis outage lines by process: {counts}")
    assert problems(logs) == []
    assert all(n <= 2 for n in counts.values()), counts


async def _ready(d: Deployment, http: aiohttp.ClientSession, role: str) -> bool:
    status, _ = await d.readyz(http, role)
    return status == 200
