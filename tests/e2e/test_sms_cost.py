"""SMS that cannot run up a bill (issue 35), against a real `valet serve` (SQLite), the fake
Twilio REST server (which bills segments by Twilio's own rules: tests/fakes/sms_segments.py)
and the fake LLM:

- strangers get at most one SMS each, none abroad, at most the hourly cap in all, and the
  owner a few notices;
- a person over their rate limit hears "slow down" at most once a minute;
- a 3,000-character answer goes in at most 3 segments, ending on a sentence, with MORE for
  the rest, which comes without an LLM call; a new question starts afresh;
- a person at their daily allowance (each LLM call checked at its worst cost before it goes)
  is told once, the owner once, their next messages wait, and `valet budget raise` lets them
  through.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from persona import load_persona
from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.fakes.sms_segments import segments
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
FROM = "+15005550006"
OWNER = "+12125550100"
ALICE = "+12125550123"
LINES = load_persona("default").lines  # what `valet serve` says (the default persona's)
MORE = LINES.sms_more
_sids = itertools.count(1)


@dataclass
class Served:
    twilio: FakeTwilio
    http: aiohttp.ClientSession
    url: str
    env: dict[str, str]
    db: Path

    async def text(self, sender: str, body: str, media: list[str] | None = None) -> None:
        params = inbound_params(sender, body, sid=f"SM{next(_sids):032d}",
                                account_sid=self.twilio.account_sid, media=media)
        async with await post_signed(self.http, self.url, PUBLIC + "/sms/inbound", params,
                                     self.twilio.auth_token) as response:
            assert response.status == 200

    async def quiet(self, timeout: float = 90) -> None:
        """Until every message is answered (or waits at an allowance) and every reply sent."""
        deadline = time.monotonic() + timeout
        while True:
            with sqlite3.connect(self.db) as db:
                busy = db.execute(
                    "SELECT (SELECT COUNT(*) FROM inbox WHERE status IN ('received',"
                    " 'processing')) + (SELECT COUNT(*) FROM outbox WHERE status IN"
                    " ('pending', 'sending'))").fetchone()[0]
            if busy == 0:
                return
            assert time.monotonic() < deadline, f"{busy} messages still on their way"
            await asyncio.sleep(0.1)

    async def until(self, what: str, test: object, timeout: float = 90) -> None:
        assert callable(test)
        deadline = time.monotonic() + timeout
        while not test():
            assert time.monotonic() < deadline, f"never: {what}"
            await asyncio.sleep(0.1)


@asynccontextmanager
async def serving(tmp_path: Path, fake_llm: FakeOpenAI, config: str,
                  **more_env: str) -> AsyncIterator[Served]:
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        port = free_port()
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_PUBLIC_URL=PUBLIC,
                        VALET_SMS_FROM_NUMBER=FROM, VALET_HTTP_PORT=str(port),
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url, **more_env)
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\n"
            f"owner:\n  name: Sam\n  phone_numbers: ['{OWNER}']\n{config}")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
            yield Served(twilio, http, f"http://127.0.0.1:{port}/sms/inbound", env,
                         tmp_path / "valet.db")
        finally:
            proc.terminate()
            await proc.wait()


# --- strangers ------------------------------------------------------------------------------


async def test_strangers_get_one_sms_each_none_abroad_and_no_more_than_the_hourly_cap(
        fake_llm, tmp_path):
    config = "access:\n  channels:\n    sms: {policy: pairing}\n"
    async with serving(tmp_path, fake_llm, config) as served:
        home = [f"+1312555{i:04d}" for i in range(60)]
        abroad = [f"+4477009{i:05d}" for i in range(5)] + \
                 [f"+7916123{i:04d}" for i in range(5)] + \
                 [f"+234803123{i:04d}" for i in range(5)] + \
                 [f"+88216123{i:04d}" for i in range(5)]
        # Whatever they send: a greeting, HELP, a link code, a code-shaped word.
        first = ["hi", "HELP", "LINK 4K7M2Q", "K7M2Q4"]
        await asyncio.gather(*(served.text(n, first[i % 4]) for i, n in enumerate(home)))
        await asyncio.gather(*(served.text(n, "hi") for n in abroad))
        await asyncio.gather(*(served.text(n, "hello again?") for n in home[:20]))
        await served.quiet()
        sent = served.twilio.sent
        to_strangers = [m for m in sent if m.to != OWNER]
        assert all(served.twilio.bodies_to(n).__len__() <= 1 for n in home)
        assert not [m for m in sent if m.to in abroad]
        assert 0 < len(to_strangers) <= 10  # sms.stranger_replies_per_hour
        notices = served.twilio.bodies_to(OWNER)
        assert 1 <= len(notices) <= 3, notices
        assert any("won't answer more" in n for n in notices)  # the one digest
        assert any("Reply PAIR " in n for n in notices)  # a request with its code
        assert fake_llm.calls == 0
        for message in sent:  # what Valet said it cost is what Twilio bills
            assert message.segments == segments(message.body).count
        # The same again: nobody gets a second SMS within the day.
        before = len(served.twilio.sent)
        await asyncio.gather(*(served.text(n, "hi") for n in home + abroad))
        await served.quiet()
        assert [m.to for m in served.twilio.sent[before:] if m.to != OWNER] == []


# --- a person over their rate limit ----------------------------------------------------------


async def test_over_the_rate_limit_a_person_hears_slow_down_at_most_once_a_minute(
        fake_llm, tmp_path):
    config = ("rate_limit_per_minute: 20\ngateway:\n  mid_turn: queue\n"
              f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n")
    fake_llm.script(*(Reply(content=f"Answer {i}.") for i in range(60)))
    async with serving(tmp_path, fake_llm, config) as served:
        started = time.monotonic()
        for i in range(60):
            await served.text(ALICE, f"question {i}")
        await served.quiet()
        minutes = (time.monotonic() - started) // 60 + 1
        bodies = served.twilio.bodies_to(ALICE)
        slow = [b for b in bodies if b == LINES.rate_limited]
        assert 1 <= len(slow) <= minutes, bodies
        answers = [b for b in bodies if b.startswith("Answer ")]
        assert len(answers) == fake_llm.calls and 20 <= len(answers) <= 20 * minutes


# --- one long answer ---------------------------------------------------------------------------


def long_answer() -> str:
    """3,000 characters in sentences, with GSM-7 escapes (€ [ ]) and a URL in the middle."""
    sentences = []
    for i in itertools.count():
        sentences.append(f"Step {i} costs €{i} [about {i * 3} minutes], see "
                         f"https://example.com/plan/{i}?a=1.b for the details.")
        if len(" ".join(sentences)) > 3000:
            break
    return " ".join(sentences)[:3000].rsplit(". ", 1)[0] + "."


async def test_a_long_answer_fits_three_segments_and_more_sends_the_rest_without_the_llm(
        fake_llm, tmp_path):
    config = f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n"
    answer = long_answer()
    assert 2900 <= len(answer) <= 3000
    shorter = answer[:2000].rsplit(". ", 1)[0] + "."  # shortened once, still too long
    fake_llm.script(Reply(content=answer), Reply(content=shorter))
    async with serving(tmp_path, fake_llm, config) as served:
        await served.text(ALICE, "tell me the whole plan")
        await served.quiet()
        assert fake_llm.calls == 2  # the answer and one shortening pass
        [first] = served.twilio.sent
        billed = segments(first.body)
        assert billed.count <= 3 and billed.encoding == "GSM-7", billed
        assert first.segments == billed.count
        said = first.body.removesuffix(" " + MORE)
        assert said != first.body and said.endswith(".")  # a whole sentence, then MORE
        assert shorter.startswith(said)

        await served.text(ALICE, "MORE")
        await served.quiet()
        assert fake_llm.calls == 2  # no LLM call
        second = served.twilio.sent[1].body
        assert segments(second).count <= 3
        assert shorter.startswith(f"{said} {second.removesuffix(' ' + MORE)}")

        # A new question drops the rest: "more" after it is a message like any other.
        fake_llm.script(Reply(content="Lunch is at noon."), Reply(content="More of what?"))
        await served.text(ALICE, "when is lunch?")
        await served.text(ALICE, "more")
        await served.quiet()
        assert served.twilio.bodies_to(ALICE)[-2:] == ["Lunch is at noon.", "More of what?"]
        assert fake_llm.calls == 4


async def test_a_ucs2_answer_is_held_to_three_segments_counting_surrogate_pairs(
        fake_llm, tmp_path):
    config = f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n"
    # Cyrillic (UCS-2) with a character outside the BMP (a surrogate pair: two units).
    answer = " ".join(f"Шаг {i} 𝄞 займёт около {i} минут." for i in range(120))
    fake_llm.script(Reply(content=answer), Reply(content=answer))
    async with serving(tmp_path, fake_llm, config) as served:
        await served.text(ALICE, "план?")
        await served.quiet()
        [first] = served.twilio.sent
        billed = segments(first.body)
        assert billed.encoding == "UCS-2" and billed.count <= 3
        assert first.segments == billed.count
        assert first.body.endswith("минут. " + MORE)


# --- a daily budget -------------------------------------------------------------------------


async def test_at_the_allowance_messages_wait_until_the_owner_raises_it(fake_llm, tmp_path):
    # 100 + 100 tokens at $1 and $1,500 a million: $0.1501 a turn, and $0.01 an SMS segment.
    # Each call is checked before it goes at its worst cost (its prompt's tokens and
    # llm.max_output_tokens, 100: about $0.155), issue 44.
    config = ("llm:\n  max_output_tokens: 100\n"
              "  prices:\n    fake-model: {input: 1, output: 1500}\n"
              "sms:\n  price_per_segment: 0.01\n"
              "budget:\n  daily_usd: 0.50\n  check_seconds: 0.3\n"
              f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n")
    fake_llm.script(*(Reply(content=f"Answer {i}.", usage=(100, 100)) for i in range(1, 6)))
    async with serving(tmp_path, fake_llm, config) as served:
        for i in (1, 2):
            await served.text(ALICE, f"question {i}")
            await served.quiet()
        await served.text(ALICE, "/usage")
        await served.quiet()
        assert served.twilio.bodies_to(ALICE)[-1] == \
            "Last 24 hours: $0.32 of your $0.50 allowance. This month: $0.32."
        await served.text(ALICE, "question 3")  # $0.33 spent: its call fits, and it ends at $0.49
        await served.quiet()
        for i in (4, 5):  # $0.49 and a call that may cost $0.155: not made, they wait
            await served.text(ALICE, f"question {i}")
        # (The inbox is quiet once they wait, a moment before she is told.)
        await served.until("she is told", lambda: LINES.budget_reached in
                           served.twilio.bodies_to(ALICE))
        await served.quiet()
        bodies = served.twilio.bodies_to(ALICE)
        assert [b for b in bodies if b.startswith("Answer")] == \
            ["Answer 1.", "Answer 2.", "Answer 3."]
        assert bodies.count(LINES.budget_reached) == 1
        [owner] = [b for b in served.twilio.bodies_to(OWNER) if "allowance" in b]
        assert owner.startswith(f"{ALICE} reached today's allowance ($0.49 of $0.50)")
        assert fake_llm.calls == 3

        code, out, err = await run_valet(["budget", "raise", f"sms:{ALICE}"], served.env)
        assert code == 0, err
        assert "raised" in out and "by $0.50" in out
        await served.until("the waiting messages are answered",
                           lambda: "Answer 5." in served.twilio.bodies_to(ALICE))
        await served.quiet()
        bodies = served.twilio.bodies_to(ALICE)
        assert [b for b in bodies if b.startswith("Answer")][-2:] == ["Answer 4.", "Answer 5."]
        assert bodies.count(LINES.budget_reached) == 1
        assert len([b for b in served.twilio.bodies_to(OWNER) if "allowance" in b]) == 1
