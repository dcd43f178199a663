"""Chaos: 2 web, 2 worker and 1 scheduler processes on one Postgres and one Redis, while a random
one of them is killed with SIGKILL every few seconds and started again.

50 people (25 on the fake Telegram, polled by the web processes; 25 by signed Twilio webhooks,
sent to either web process and sent again when one does not answer, as Twilio does) send 10
messages each, in bursts, without waiting for answers; ten of them ask for an action that needs
approval and answer its prompt (a button on Telegram, "1" by SMS). Reminders fall due while it
runs. The fake LLM answers some requests with 429 and 5xx bursts; Telegram answers some sends
with 429.

Afterwards: every message answered exactly once, each person's answers in the order they
wrote, no approved action run twice, no reminder sent twice, no reply lost. A reply in doubt
is one a killed worker had claimed (`sending`) when it died: Valet never sends such a message
again (the channel may have it: never twice); each is counted, and the fakes say
whether it arrived. The counts are printed (pytest -s, or the captured output on failure)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import re
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app.database import open_database
from bot.config.policies import DeliveryPolicy
from bot.contracts.clock import SystemClock
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from persona.lines import DEFAULT
from tests.e2e.roles_harness import RoleProcess
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import Fail, Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, sign
from tests.helpers import said
from triggers.service import Owner
from triggers.wiring import build_task_service

pytestmark = pytest.mark.slow

PEOPLE, EACH = 50, 10
ASKING = {0, 1, 2, 3, 4, 25, 26, 27, 28, 29}  # ask for an approval at their 5th message
REMINDERS = 10
KILL_EVERY = (3.0, 6.0)  # seconds between kills
# Kills once everyone has written (two rounds of the victims' order), while what they wrote
# is handled; then the killing stops, quiet or not. (Killing on until quiet ended only when
# the machine outpaced the kills: at load 10-15 each worker lived about 20 s, spent much of
# it starting, and left its claimed sends holding their addresses for stale_sending_seconds.)
KILLS_AFTER_SENT = 14
WAIT = 300.0  # the whole story's bound, generous: about 90 s quiet, past 150 s at load 8
PUBLIC = "https://valet.example.com"
INTERRUPTED = "was interrupted before it started: nothing was done"  # the person is told
# Killed while the action ran (a loaded machine stretches a short action past a kill): its
# outcome is unknown, it is never run again on its own, and the person is told so.
INTERRUPTED_RUNNING = "was interrupted: it may or may not have happened"
CONFIG = """\
memory:
  enabled: false
gateway:
  mid_turn: queue
  user_lock_ttl_seconds: 4
  claim_idle_seconds: 2
  sweep_seconds: 2
triggers:
  heartbeat_seconds: 0.5
  lease_seconds: 2
loop:
  llm_max_retries: 6
  llm_retry_base_delay: 0.1
"""


def chat_of(i: int) -> int:
    return 1000 + i


def phone_of(i: int) -> str:
    return f"+1212555{i:04d}"


def telegram(i: int) -> bool:
    return i < PEOPLE // 2


class FakeModel:
    """"re: <text>"; the approval askers' "send the report" calls send_email; a tool's
    result is answered "done: ..."; every 37th request starts a burst of two failures."""

    def __init__(self) -> None:
        self.n = 0
        self.failing = 0
        self.failed = 0

    def __call__(self, body: dict[str, Any]) -> Reply | Fail:
        self.n += 1
        if self.failing:
            self.failing -= 1
            self.failed += 1
            return Fail(429, retry_after=0.2) if self.n % 2 else Fail(503)
        if self.n % 37 == 0:
            self.failing = 1
            self.failed += 1
            return Fail(500)
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(content=f"done: {last['content']}")
        text = str(said(last["content"]))
        asked = re.search(r"send the report (p\d+)", text)
        if asked:
            return Reply(tool_calls=[ToolCall("send_email", {
                "to": f"{asked.group(1)}@example.com", "subject": f"report {asked.group(1)}"})])
        return Reply(content=f"re: {text}")


async def people(dsn: str) -> None:
    db = await open_database(dsn)
    try:
        users = UserStore(db)
        identities = IdentityStore(db, users)
        now = datetime.now(UTC)
        for i in range(PEOPLE):
            await users.ensure(f"p{i}", display_name=f"P{i}", at=now)
            channel, address = ("telegram", str(chat_of(i))) if telegram(i) \
                else ("sms", phone_of(i))
            await identities.link(channel, address, f"p{i}", at=now)
        tasks = build_task_service(db, SystemClock(), lines=DEFAULT)
        for k in range(REMINDERS):
            await tasks.remind(Owner(f"p{k * 5}", "UTC"), f"rem-{k}",
                               now + timedelta(seconds=15 + 3 * k))
    finally:
        await db.close()


async def telegram_429s(tg: FakeTelegram, stop: asyncio.Event) -> None:
    for _ in range(4):
        await asyncio.sleep(5.0)
        tg.fail_next("sendMessage", 429, retry_after=1, times=2)


class Story:
    def __init__(self, tg: FakeTelegram, twilio: FakeTwilio, webs: list[RoleProcess],
                 dsn: str) -> None:
        self.tg, self.twilio, self.webs, self.dsn = tg, twilio, webs, dsn
        self.sms_retries = 0
        self.prompts_in_doubt = 0  # approval prompts a killed worker was sending: never seen
        self.interrupted = 0  # approved actions a kill stopped before they started
        self.in_doubt_actions = 0  # approved actions a kill stopped while they ran
        self._db: Any = None
        self.logs: list[Path] = []  # the role processes' logs, shown when the story fails

    async def in_doubt(self, i: int, like: str) -> bool:
        """Whether the message to p{i} awaited (its text LIKE `like`) was being sent by a
        worker that was killed: Valet never sends it again (never twice), so it may never come.
        (Any message of theirs in doubt was counted once: at load 16 nearly every asker had
        one, and the approvals went untested.)"""
        if self._db is None:
            self._db = await open_database(self.dsn)
        address = str(chat_of(i)) if telegram(i) else phone_of(i)
        stale = datetime.now(UTC) - timedelta(seconds=10)
        return bool(await self._db.fetchval(
            "SELECT COUNT(*) FROM outbox WHERE address = $1 AND text LIKE $3 AND"
            " ((status = 'sending' AND claimed_at < $2)"
            " OR (status = 'dead' AND last_error LIKE '%unknown%'))",
            address, stale, like))

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()

    def received(self, i: int) -> list[str]:
        return self.tg.texts(chat_of(i)) if telegram(i) else self.twilio.bodies_to(phone_of(i))

    async def text(self, http: aiohttp.ClientSession, i: int, body: str, sid: str) -> None:
        """A signed webhook to a web process; sent again (to the other one) until one
        answers 200, as Twilio retries."""
        params = inbound_params(phone_of(i), body, sid=sid)
        headers = {"X-Twilio-Signature": sign(self.twilio.auth_token,
                                              f"{PUBLIC}/sms/inbound", params)}
        for attempt in range(200):
            web = self.webs[(i + attempt) % len(self.webs)]
            try:
                async with http.post(f"{web.base}/sms/inbound", data=params,
                                     headers=headers) as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            self.sms_retries += 1
            await asyncio.sleep(0.2)
        raise AssertionError(f"no web process took {sid}")

    async def say(self, http: aiohttp.ClientSession, i: int, j: int, body: str) -> None:
        if telegram(i):
            self.tg.user_says(chat_of(i), body)
        else:
            await self.text(http, i, body, f"SM{i:016d}{j:016d}")

    async def until(self, check: Any, what: str, timeout: float = WAIT,
                    seen: Any = None, doubt: tuple[int, str] | None = None) -> bool:
        """True once `check()` holds; False when what is awaited (`doubt`: the person and
        its text, as `in_doubt` takes them) is in doubt."""
        deadline = time.monotonic() + timeout
        looked = time.monotonic()
        while not check():
            if doubt is not None and time.monotonic() - looked > 2.0:
                looked = time.monotonic()
                if await self.in_doubt(*doubt):
                    return check()
            if time.monotonic() > deadline:
                if self._db is None:
                    self._db = await open_database(self.dsn)
                raise AssertionError(f"never happened: {what}"
                                     + (f"; they received {seen()}" if seen else "")
                                     + f"; {await stuck(self._db, self.logs)}")
            await asyncio.sleep(0.1)
        return True

    async def approve(self, http: aiohttp.ClientSession, i: int) -> None:
        """Wait for the prompt, then answer it: a button on Telegram, "1" by SMS."""
        if not await self.until(lambda: any("OK" in t for t in self.received(i)),
                                f"p{i}'s approval prompt", seen=lambda: self.received(i),
                                doubt=(i, "%OK%")):
            self.prompts_in_doubt += 1  # a prompt nobody saw is not answered
            return
        if telegram(i):
            prompt = next(m for m in self.tg.sent(chat_of(i)) if m.buttons)
            self.tg.user_presses(chat_of(i), prompt.message_id,
                                 prompt.buttons[0]["callback_data"])
        else:
            await self.text(http, i, "1", f"SM{i:016d}{99:016d}")
        # Done, or told it was interrupted: a worker killed between the approval and the
        # action's start leaves it not started, one killed while it ran leaves its outcome
        # unknown; neither is run again on its own (the person asks again).
        await self.until(lambda: any(t.startswith("done:") or INTERRUPTED in t
                                     or INTERRUPTED_RUNNING in t for t in self.received(i)),
                         f"p{i}'s approved action", seen=lambda: self.received(i),
                         doubt=(i, "done:%"))
        if any(INTERRUPTED in t for t in self.received(i)):
            self.interrupted += 1
        elif any(INTERRUPTED_RUNNING in t for t in self.received(i)):
            self.in_doubt_actions += 1

    async def person(self, http: aiohttp.ClientSession, i: int) -> None:
        rng = random.Random(i)
        await asyncio.sleep(rng.uniform(0, 12))
        for j in range(EACH):
            body = f"send the report p{i}" if i in ASKING and j == 4 else f"p{i} m{j}"
            await self.say(http, i, j, body)
            if i in ASKING and j == 4:
                await self.approve(http, i)
            await asyncio.sleep(rng.choice((0.05, 0.1, 0.3, 1.0, 2.0)))


async def chaos(procs: list[RoleProcess], stop: asyncio.Event, kills: Counter[str],
                sent: asyncio.Event) -> None:
    """Kill -9 and start again, every few seconds: the workers most often (they hold turns
    and sends), the web processes and the scheduler in between; until all is quiet, or
    KILLS_AFTER_SENT kills once everyone has written (`sent`)."""
    rng = random.Random(7)
    web1, web2, worker1, worker2, scheduler = procs
    restarts: list[asyncio.Task[None]] = []
    order = [worker1, web1, worker2, scheduler, worker1, web2, worker2]
    n = after = 0
    while not stop.is_set() and after < KILLS_AFTER_SENT:
        try:
            await asyncio.wait_for(stop.wait(), rng.uniform(*KILL_EVERY))
            return
        except TimeoutError:
            pass
        victim = order[n % len(order)]
        n += 1
        # Only a process that is up is killed: one still starting again after its last kill
        # is left to start. (Killed while starting, as the loop did before, a worker that
        # took 60 s to start at load 10-15 never served again: every reply stayed pending,
        # attempts 0, and the story "never went quiet".)
        if not victim.up:
            continue
        await victim.kill()
        kills["+".join(victim.roles)] += 1
        after += sent.is_set()
        restarts.append(asyncio.create_task(victim.start(ready=False)))
    await asyncio.gather(*restarts)


async def test_chaos_every_message_answered_once_in_order_while_processes_die(
        postgres_dsn, redis_url, fake_llm, tmp_path):
    model = FakeModel()
    fake_llm.responder = model
    actions = tmp_path / "actions.jsonl"
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        f"    approval: always\n    settings: {{log: {actions}}}\n")
    async with FakeTwilio() as twilio, FakeTelegram() as tg, aiohttp.ClientSession() as http:
        # Paired people have talked to the bot before: a reminder due before their first
        # message here may be sent (Telegram answers "chat not found" to a bot nobody started).
        tg.started(*(chat_of(i) for i in range(PEOPLE) if telegram(i)))
        env = clean_env(tmp_path, VALET_DATABASE_URL=postgres_dsn, VALET_REDIS_URL=redis_url,
                        VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url, VALET_TELEGRAM_TOKEN=TOKEN,
                        VALET_TELEGRAM_API_URL=tg.api_url, VALET_AGENTS_FILES=str(registry),
                        VALET_LOG_LEVEL="WARNING")
        (tmp_path / "valet.yaml").write_text(CONFIG)
        status, _, err = await run_valet(["migrate"], env)
        assert status == 0, err
        await people(postgres_dsn)
        webs = [RoleProcess(["web"], env, tmp_path / f"web{n}.log") for n in (1, 2)]
        procs = [*webs, *(RoleProcess(["worker"], env, tmp_path / f"worker{n}.log")
                          for n in (1, 2)),
                 RoleProcess(["scheduler"], env, tmp_path / "scheduler.log")]
        story = Story(tg, twilio, webs, postgres_dsn)
        story.logs = [p.log for p in procs]
        stop, kills = asyncio.Event(), Counter[str]()
        started = time.monotonic()
        try:
            await asyncio.gather(*(p.start() for p in procs))
            up_at = time.monotonic()
            sent = asyncio.Event()  # everyone has written
            killer = asyncio.create_task(chaos(procs, stop, kills, sent))
            tg.fail_next("sendMessage", 429, retry_after=1, times=3)  # Telegram's 429s
            await asyncio.gather(*(story.person(http, i) for i in range(PEOPLE)),
                                 telegram_429s(tg, stop))
            sent_at = time.monotonic()
            sent.set()
            db = await open_database(postgres_dsn)
            try:
                # The killing goes on while it is handled (until quiet, or KILLS_AFTER_SENT).
                await quiet(db, stop, tg, story.logs)
                await killer
                await quiet(db, stop, tg, story.logs)  # ...and what the last kill left is done
                quiet_at = time.monotonic()
                await asyncio.sleep(3.0)  # anything sent twice would show by now
                runs = await db.fetch("SELECT outcome, detail FROM trigger_runs")
                print("reminder runs:", Counter((r["outcome"], r["detail"]) for r in runs))
                in_doubt = await db.fetch("SELECT text FROM outbox WHERE status = 'sending'"
                                          " OR (status = 'dead' AND last_error LIKE '%unknown%')")
                unanswered = await what_became_of(db, story)
            finally:
                await db.close()
        finally:
            stop.set()
            await story.close()
            for proc in procs:
                await proc.kill()
        elapsed = time.monotonic() - started
    print(f"\nchaos phases: up {up_at - started:.0f}s, sent {sent_at - started:.0f}s, "
          f"quiet {quiet_at - started:.0f}s")
    counts = tally(story, actions, [r["text"] for r in in_doubt], answered_otherwise(unanswered))
    print(f"\nchaos: {elapsed:.0f}s, {sum(kills.values())} kills ({dict(kills)}), "
          f"{model.failed} LLM failures, {story.sms_retries} SMS webhook retries, "
          f"{story.interrupted} approved actions interrupted before they started and "
          f"{story.in_doubt_actions} while they ran; "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
    assert counts["duplicates"] == 0
    # Every unanswered message with its rows, in full (a list's repr would be cut short).
    assert counts["lost"] == 0, "\n".join(map(str, unanswered))
    assert counts["reorderings"] == 0
    # Each approved action ran once at most; one killed while it ran may or may not have.
    done = len(ASKING) - story.prompts_in_doubt - story.interrupted
    assert done - story.in_doubt_actions <= counts["approvals executed"] <= done
    assert counts["reminders sent"] >= REMINDERS - counts["in doubt, not delivered"]
    # A killed worker leaves at most the sends it had claimed in doubt (never resent): at most
    # its deliverer's concurrency. (The bound was 2 a kill, what a quiet machine had in
    # flight; at load 16, 62 after 15 kills: each send was slower, so more were under way.)
    assert counts["in doubt, not delivered"] <= DeliveryPolicy().concurrency * kills["worker"]
    assert kills["worker"] >= 3 and sum(kills.values()) >= 6


async def quiet(db: Any, stop: asyncio.Event, tg: FakeTelegram, logs: list[Path]) -> None:
    """Every Telegram update taken, every message handled, every reply sent (or in doubt),
    every reminder fired; then the killing stops. (A poller killed outright holds its lease
    until it runs out: its updates wait in Telegram until another web process polls.)"""
    deadline = time.monotonic() + WAIT
    seen = ""
    while time.monotonic() < deadline:
        open_rows = await db.fetchval(
            "SELECT COUNT(*) FROM inbox WHERE status IN ('received', 'processing')")
        unsent = await db.fetchval("SELECT COUNT(*) FROM outbox WHERE status = 'pending'")
        due = await db.fetchval("SELECT COUNT(*) FROM trigger_tasks WHERE status = 'active'")
        if open_rows == 0 and unsent == 0 and due == 0 and tg.unconfirmed() == 0:
            stop.set()
            return
        seen = (f"{open_rows} messages open, {unsent} replies pending, {due} reminders due, "
                f"{tg.unconfirmed()} Telegram updates unconfirmed")
        await asyncio.sleep(0.5)
    raise AssertionError(f"never quiet: {seen}; {await stuck(db, logs)}")


async def stuck(db: Any, logs: list[Path]) -> str:
    """What the deliverers were looking at when the story never went quiet: each address
    with replies pending, whatever of it is being sent, and the role processes' last lines."""
    pending = await db.fetch(
        "SELECT channel, address, COUNT(*) AS n, MAX(attempts) AS attempts,"
        " MIN(next_attempt_at) AS due, MAX(last_error) AS error FROM outbox"
        " WHERE status = 'pending' GROUP BY channel, address ORDER BY n DESC LIMIT 10")
    sending = await db.fetch("SELECT id, channel, address, claimed_at, attempts FROM outbox"
                             " WHERE status = 'sending' ORDER BY claimed_at LIMIT 10")
    rows = [dict(r) for p in pending[:3] for r in await db.fetch(
        "SELECT id, status, priority, attempts, waits, next_attempt_at, claimed_at, last_error"
        " FROM outbox WHERE channel = $1 AND address = $2 AND status <> 'sent' ORDER BY id",
        p["channel"], p["address"])]
    now = datetime.now(UTC)
    tails = "\n".join(f"--- {log.name}:\n{log.read_text(errors='replace')[-1500:]}"
                      for log in logs if log.exists())
    return (f"at {now:%H:%M:%S}, pending by address: {[dict(r) for r in pending]}; "
            f"being sent: {[dict(r) for r in sending]}; the first addresses' rows: {rows}"
            f"\n{tails}")


# While a card waits (its prompt in doubt: a killed worker was sending it), every other answer
# ends with the line that names what waits and how to answer (issue 43: bot.approvals).
STILL_WAITING = r"\n\nStill waiting for your OK: [^\n]*"


def answers_message(text: str, i: int, j: int) -> bool:
    return re.fullmatch(rf"re: p{i} m{j}(?:{STILL_WAITING})?", text) is not None


async def what_became_of(db: Any, story: Story) -> list[dict[str, Any]]:
    """For a message with no answer: its inbox row and what was queued for it (shown when the
    story fails)."""
    out = []
    for i in range(PEOPLE):
        got = set(story.received(i))
        for j in range(EACH):
            if (i in ASKING and j == 4) or any(answers_message(t, i, j) for t in got):
                continue
            row = await db.fetchrow("SELECT id, status, attempts, error FROM inbox"
                                    " WHERE text = $1", f"p{i} m{j}")
            queued = await db.fetch("SELECT status, text, last_error FROM outbox"
                                    " WHERE dedupe_key = $1", f"reply:{row['id']}") if row else []
            out.append({"message": f"p{i} m{j}", "inbox": dict(row) if row else None,
                        "outbox": [dict(q) for q in queued]})
    return out


def answered_otherwise(unanswered: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """Messages answered by a reply that does not echo them: the reply queued for that very
    message (its inbox row's) was sent. The model answers a tool's result with "done: ..."
    (FakeModel), and an approved action killed while it ran puts its outcome ("Outcome
    unknown: ...") in the asker's next turn: that turn's reply is the answer to their next
    message, in its words, not "re: ...". Seen once beside a whole suite (p28 m5)."""
    found = set()
    for entry in unanswered:
        if any(row["status"] == "sent" and row["text"].startswith("done: ")
               for row in entry["outbox"]):
            i, j = entry["message"].removeprefix("p").split(" m")
            found.add((int(i), int(j)))
    return found


def tally(story: Story, actions: Path, in_doubt: list[str],
          answered: set[tuple[int, int]]) -> dict[str, int]:
    answers: Counter[tuple[int, int]] = Counter()
    reorderings = 0
    reminders: Counter[str] = Counter()
    for i in range(PEOPLE):
        seen = []
        for text in story.received(i):
            match = re.fullmatch(rf"re: p{i} m(\d+)(?:{STILL_WAITING})?", text)
            if match:
                answers[(i, int(match.group(1)))] += 1
                seen.append(int(match.group(1)))
            reminder = re.search(r"Reminder: (rem-\d+)", text)
            if reminder:
                reminders[reminder.group(1)] += 1
        reorderings += sum(1 for a, b in itertools.pairwise(seen) if b < a)
    expected = {(i, j) for i in range(PEOPLE) for j in range(EACH)
                if not (i in ASKING and j == 4)}
    doubted = {(int(m.group(1)), int(m.group(2))) for t in in_doubt
               if (m := re.fullmatch(rf"re: p(\d+) m(\d+)(?:{STILL_WAITING})?", t))}
    everything = [t for i in range(PEOPLE) for t in story.received(i)]
    executed = Counter(json.loads(line)["to"] for line in actions.read_text().splitlines()) \
        if actions.exists() else Counter()
    return {
        "messages in": len(expected) + 2 * len(ASKING),
        "answers out": sum(answers.values()),
        "duplicates": sum(n - 1 for n in answers.values() if n > 1)
        + sum(n - 1 for n in executed.values() if n > 1)
        + sum(n - 1 for n in reminders.values() if n > 1),
        "lost": len(expected - set(answers) - doubted - answered),
        "in doubt (claimed by a killed worker, never resent)": len(in_doubt),
        "in doubt, not delivered": sum(not any(text in t for t in everything)
                                       for text in in_doubt),
        "reorderings": reorderings,
        "approvals executed": sum(executed.values()),
        "reminders sent": sum(reminders.values()),
    }
