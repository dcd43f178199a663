"""`valet serve` started while its Postgres is stopped (a reboot that brought Valet up first, a
restart during an outage), as one real process on a Postgres of this test's own:

- it starts anyway: /healthz answers, /readyz says 503 and why (the database, retried);
  20 signed texts from the owner each get 200 (kept in the spool); nothing is polled from
  Telegram; once Postgres is started, the migrations are applied first (the database was
  never migrated), then all 20 are answered, once each, in the order they were sent, and
  what the owner wrote on Telegram meanwhile is answered too;
- the same with the spool's filesystem full for the first 5 texts (a 64 KiB tmpfs, filled):
  those 5 are refused with 503 (Twilio is told, nothing is acknowledged), no temporary file is
  left in the spool, and the other 15 are answered, once each, in order.

The log carries no traceback, and at most one database WARNING line a minute."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app.database import open_database
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
OWNER_PHONE = "+12125550100"
OWNER_CHAT = 4242
TEXTS = 20
WAIT = 120.0
CONFIG = f"""\
memory:
  enabled: false
gateway:
  mid_turn: queue
  sweep_seconds: 1
owner:
  phone_numbers: ["{OWNER_PHONE}"]
  telegram_ids: ["{OWNER_CHAT}"]
"""

until = functools.partial(wait_until, timeout=WAIT)


def answer(body: dict[str, Any]) -> Reply:
    return Reply(content=f"re: {said(body['messages'][-1]['content'])}")


class Started:
    """One `valet serve` on a stopped Postgres, with fake Twilio, Telegram and LLM."""

    def __init__(self, tmp_path: Path, dsn: str, llm: FakeOpenAI, twilio: FakeTwilio,
                 tg: FakeTelegram) -> None:
        self.tmp_path, self.dsn, self.twilio, self.tg = tmp_path, dsn, twilio, tg
        self.data = tmp_path / "data"
        self.env = clean_env(
            tmp_path, VALET_DATABASE_URL=dsn, VALET_LLM_BASE_URL=llm.base_url,
            VALET_LLM_MODEL="m", VALET_PUBLIC_URL=PUBLIC, VALET_DATA_DIR=str(self.data),
            VALET_SMS_FROM_NUMBER="+15005550006",
            VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
            VALET_TWILIO_AUTH_TOKEN=twilio.auth_token, VALET_TWILIO_API_URL=twilio.base_url,
            VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
            VALET_LOG_LEVEL="INFO")
        (tmp_path / "valet.yaml").write_text(CONFIG)
        self.proc = RoleProcess([], self.env, tmp_path / "serve.log")

    async def text(self, http: aiohttp.ClientSession, n: int) -> int:
        """Text number n, signed as Twilio signs it (sent once: Twilio does not retry)."""
        params = inbound_params(OWNER_PHONE, f"m{n:02d}", sid=f"SM{n:032d}")
        headers = {"X-Twilio-Signature": sign(self.twilio.auth_token, f"{PUBLIC}/sms/inbound",
                                              params)}
        async with http.post(f"{self.proc.base}/sms/inbound", data=params,
                             headers=headers) as resp:
            return resp.status

    async def readyz(self, http: aiohttp.ClientSession) -> tuple[int, dict[str, Any]]:
        async with http.get(self.proc.base + "/readyz") as resp:
            return resp.status, json.loads(await resp.text())

    async def inbox(self) -> str:
        db = await open_database(self.dsn, migrate=False)
        try:
            rows = await db.fetch("SELECT id, external_id, text, status FROM inbox "
                                  "ORDER BY id")
        finally:
            await db.close()
        return f"received: {self.twilio.bodies_to(OWNER_PHONE)}\ninbox: {rows}"

    def log(self) -> str:
        return self.proc.log.read_text()


@pytest.fixture
async def started(tmp_path: Path, own_postgres: ThrowawayPostgres, fake_llm: FakeOpenAI
                  ) -> AsyncIterator[Started]:
    fake_llm.responder = answer
    dsn = own_postgres.create_database("valet")  # never migrated: `valet serve` does it
    own_postgres.pause()
    async with FakeTwilio() as twilio, FakeTelegram() as tg:
        tg.started(OWNER_CHAT)
        one = Started(tmp_path, dsn, fake_llm, twilio, tg)
        try:
            yield one
        finally:
            await one.proc.terminate()


@pytest.fixture
def full_spool_disk(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the spool directory, the file that fills it): a 64 KiB tmpfs mounted where the spool
    is, filled up; unmounted at the end."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full spool disk is a 64 KiB tmpfs mounted for the test: needs root "
                    "and mount(8)")
    spool = tmp_path / "data" / "spool"
    spool.mkdir(parents=True, mode=0o700)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs",
                              str(spool)], capture_output=True, text=True, timeout=30)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (mount: {mounted.stderr.strip()})")
    try:
        filler = spool / "filler"
        with filler.open("wb", buffering=0) as f, pytest.raises(OSError):  # ENOSPC: full
            while True:
                f.write(b"\0" * 4096)
        yield spool, filler
    finally:
        subprocess.run(["umount", "-l", str(spool)], check=False, timeout=30)


async def _started_without_database(s: Started, http: aiohttp.ClientSession) -> None:
    await s.proc.start(ready=False)  # /healthz: it listens though the database is away
    status, ready = await s.readyz(http)
    assert status == 503 and ready["checks"]["database"] is False, ready
    said = ready["problems"]["database"]
    assert "not reached since start-up" in said and "kept in the spool" in said, said
    assert "Connect call failed" in said or "refused" in said, said


async def _answered_in_order(s: Started, expected: list[str]) -> None:
    await until(lambda: s.twilio.bodies_to(OWNER_PHONE) == expected,
                "every kept text answered once, in order", seen=s.inbox)
    await until(lambda: s.tg.texts(OWNER_CHAT) == ["re: hello from telegram"],
                "the Telegram message, polled once the database is there")
    await asyncio.sleep(3.0)  # a second answer to anything would show by now
    assert s.twilio.bodies_to(OWNER_PHONE) == expected


def _problems(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if "Traceback" in line or re.search(r" (ERROR|CRITICAL) ", line)]


def _database_warnings(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if " WARNING " in line and "database unreachable" in line]


async def test_serve_started_with_postgres_stopped_keeps_texts_and_answers_each_once_in_order(
        started: Started, own_postgres: ThrowawayPostgres):
    s = started
    async with aiohttp.ClientSession() as http:
        await _started_without_database(s, http)
        s.tg.user_says(OWNER_CHAT, "hello from telegram")  # Telegram keeps it
        statuses = [await s.text(http, n) for n in range(TEXTS)]
        assert statuses == [200] * TEXTS
        assert len(list((s.data / "spool").glob("*.json"))) == TEXTS
        assert s.twilio.sent == [] and s.tg.texts(OWNER_CHAT) == []
        assert s.tg.called("getUpdates") == []  # long polling waits for the database
        await until(lambda: _tries(s, http), "a few tries, each after a longer wait")
        assert s.tg.called("getUpdates") == []

        own_postgres.resume()
        await _answered_in_order(s, [f"re: m{n:02d}" for n in range(TEXTS)])
        await until(lambda: _ready(s, http), "/readyz 200 once the database is there")
        _, ready = await s.readyz(http)
        assert ready["spooled"] == 0, ready
    log = s.log()
    assert _problems(log) == []
    warnings = _database_warnings(log)
    print(f"\ndatabase WARNING lines: {len(warnings)}")
    assert 1 <= len(warnings) <= 2, warnings  # under a minute away: one (two windows at most)
    applied = log.index("applied migration") if "applied migration" in log else -1
    assert applied == -1 or applied < log.index("kept message(s) stored")


async def test_with_the_spool_disk_full_the_first_texts_are_refused_with_503_and_no_leftovers(
        full_spool_disk: tuple[Path, Path], started: Started, own_postgres: ThrowawayPostgres):
    s = started
    spool, filler = full_spool_disk
    assert spool == s.data / "spool"
    async with aiohttp.ClientSession() as http:
        await _started_without_database(s, http)
        s.tg.user_says(OWNER_CHAT, "hello from telegram")
        refused = [await s.text(http, n) for n in range(5)]
        assert refused == [503] * 5
        assert sorted(p.name for p in spool.iterdir()) == ["filler"]  # no temporary file
        filler.unlink()  # room again
        kept = [await s.text(http, n) for n in range(5, TEXTS)]
        assert kept == [200] * (TEXTS - 5)

        own_postgres.resume()
        await _answered_in_order(s, [f"re: m{n:02d}" for n in range(5, TEXTS)])
    log = s.log()
    assert "Traceback" not in log
    refusals = [line for line in log.splitlines() if "answered 503" in line]
    assert len(refusals) == 5 and all(" ERROR " in line for line in refusals), refusals
    assert [p for p in _problems(log) if "answered 503" not in p] == []


async def _tries(s: Started, http: aiohttp.ClientSession, at_least: int = 4) -> bool:
    """/readyz says the database was tried `at_least` times (1 + 2 + 4 s of waits)."""
    _, ready = await s.readyz(http)
    found = re.search(r"(\d+) tries", ready["problems"].get("database", ""))
    return found is not None and int(found.group(1)) >= at_least


async def _ready(s: Started, http: aiohttp.ClientSession) -> bool:
    status, _ = await s.readyz(http)
    return status == 200


async def test_stopped_before_its_database_came_back_it_exits_cleanly_and_keeps_the_spool(
        started: Started):
    s = started
    async with aiohttp.ClientSession() as http:
        await _started_without_database(s, http)
        assert await s.text(http, 0) == 200
    assert await s.proc.terminate() == 0  # SIGTERM while it waits: nothing had started
    log = s.log()
    assert "Traceback" not in log and "valet serve: stopped" in log, log[-3000:]
    assert len(list((s.data / "spool").glob("*.json"))) == 1  # kept for the next start


async def test_role_processes_started_with_postgres_stopped_wait_and_answer_in_order(
        tmp_path: Path, own_postgres: ThrowawayPostgres, own_redis: ThrowawayRedis,
        fake_llm: FakeOpenAI):
    """`valet serve --role web` and `--role worker` on a migrated database whose server is
    down at their start (a reboot): the web process keeps the texts; both start their parts
    once Postgres is back (the schema checked, not migrated: `valet migrate` ran before)."""
    fake_llm.responder = answer
    dsn = own_postgres.create_database("valet")
    async with FakeTwilio() as twilio, FakeTelegram() as tg:
        tg.started(OWNER_CHAT)
        s = Started(tmp_path, dsn, fake_llm, twilio, tg)
        s.env["VALET_REDIS_URL"] = own_redis.url
        assert (await run_valet(["migrate"], s.env))[0] == 0
        own_postgres.pause()
        web = s.proc = RoleProcess(["web"], s.env, tmp_path / "web.log")
        worker = RoleProcess(["worker"], s.env, tmp_path / "worker.log")
        try:
            async with aiohttp.ClientSession() as http:
                await asyncio.gather(web.start(ready=False), worker.start(ready=False))
                status, ready = await s.readyz(http)
                assert status == 503 and "not reached since start-up" in \
                    ready["problems"]["database"], ready
                assert [await s.text(http, n) for n in range(5)] == [200] * 5
                own_postgres.resume()
                await until(lambda: s.twilio.bodies_to(OWNER_PHONE) ==
                            [f"re: m{n:02d}" for n in range(5)],
                            "each kept text answered once, in order", seen=s.inbox)
                await until(lambda: _ready(s, http), "the web process ready")
        finally:
            await asyncio.gather(web.terminate(), worker.terminate())
    for proc in (web, worker):
        assert "Traceback" not in proc.log.read_text(), proc.log.read_text()[-3000:]
