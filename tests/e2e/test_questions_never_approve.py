"""Issue 34 item 1 against a real `valet serve` (the fake LLM, Twilio and Telegram servers): with
a card waiting, each question of the issue ("is ana ok?", "ok what's ana's number?", "ok what
does the dentist note say?", "is the dentist note ok?", "sure, but what time is the
dentist?") gets its answer, and nothing runs: the card is still listed as waiting. Then a
plain "yes" runs the action exactly once. By SMS and on Telegram."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
OWNER_PHONE = "+12125550123"
OWNER_CHAT = 42
ANA = "+447700900123"
ANA_QUESTIONS = ("is ana ok?", "ok what's ana's number?")
NOTE_QUESTIONS = ("ok what does the dentist note say?", "is the dentist note ok?",
                  "sure, but what time is the dentist?")

Say = Callable[[str], Awaitable[str]]
# The status line a Telegram chat shows while a tool runs ("asking tracker", then "✓ asking
# tracker"; shown when a loaded machine makes the tool slow): not the turn's reply, which
# always comes as a new message after it.
STATUS = re.compile(r"^(?:✓ )?[a-z][a-z ]*[.…]?$")


def notes(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT title FROM notes")]


async def until(check: Callable[[], bool], what: str, seconds: float = 60) -> None:
    async with asyncio.timeout(seconds):
        while not check():  # noqa: ASYNC110 (another process does the work)
            await asyncio.sleep(0.05)


def sms_chat(http: aiohttp.ClientSession, twilio: FakeTwilio, url: str) -> Say:
    sids = itertools.count(1)

    async def say(text: str) -> str:
        before = len(twilio.bodies_to(OWNER_PHONE))
        params = inbound_params(OWNER_PHONE, text, sid=f"SM{next(sids):032d}")
        async with await post_signed(http, url, PUBLIC + "/sms/inbound", params,
                                     twilio.auth_token) as response:
            assert response.status == 200
        await until(lambda: len(twilio.bodies_to(OWNER_PHONE)) > before, f"a reply to {text}")
        return twilio.bodies_to(OWNER_PHONE)[-1]

    return say


def telegram_chat(tg: FakeTelegram) -> Say:
    async def say(text: str) -> str:
        before = len(tg.sent(OWNER_CHAT))
        tg.user_says(OWNER_CHAT, text)

        def replies() -> list[str]:
            return [m.text for m in tg.sent(OWNER_CHAT)[before:] if not STATUS.match(m.text)]

        await until(lambda: bool(replies()), f"a reply to {text}")
        return replies()[-1]

    return say


async def story(say: Say, fake_llm, twilio: FakeTwilio, db: Path) -> None:  # type: ignore[no-untyped-def]
    fake_llm.script(
        Reply(tool_calls=[ToolCall("save_contact", {"name": "Ana", "phone": ANA})]),
        Reply(content="Saved Ana."),
        Reply(tool_calls=[ToolCall("take_note", {"title": "Dentist", "body": "Tue 3pm"})]),
        Reply(content="Noted."))
    assert await say("Ana's number is +44 7700 900123") == "Saved Ana."
    assert await say("note: dentist tue 3pm") == "Noted."
    # A message to Ana waits for the OK.
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {
        "to": "Ana", "text": "Running late, 10 min"})]))
    card = await say("text ana that I'm running late, 10 min")
    assert "Ana" in card and "Running late, 10 min" in card
    for question in ANA_QUESTIONS:
        fake_llm.script(Reply(content="Ana's number is +44 7700 900123."))
        answer = await say(question)
        assert answer.startswith("Ana's number is +44 7700 900123."), answer
        assert "Still waiting for your OK: Send Ana" in answer
        assert twilio.bodies_to(ANA) == []
        assert "Send Ana" in await say("/pending")
    fake_llm.script(Reply(content="Sent it."))
    assert (await say("yes")).endswith("Sent it.")
    await until(lambda: len(twilio.bodies_to(ANA)) == 1, "the message to Ana")
    # The note's deletion waits for the OK.
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": 1})]))
    card = await say("delete the dentist note")
    assert "Dentist" in card
    for question in NOTE_QUESTIONS:
        fake_llm.script(Reply(content="The dentist is on Tuesday at 3pm."))
        answer = await say(question)
        assert answer.startswith("The dentist is on Tuesday at 3pm."), answer
        assert notes(db) == ["Dentist"]
        assert "Delete the note #1" in await say("/pending")
    fake_llm.script(Reply(content="Deleted."))
    assert (await say("yes")).endswith("Deleted.")
    assert notes(db) == []
    fake_llm.script(Reply(content="Nothing else to do."))
    assert await say("yes") == "Nothing else to do."  # nothing waits: just a message
    assert (await say("/pending")).startswith("Nothing is waiting for your approval")
    assert len(twilio.bodies_to(ANA)) == 1  # sent once, never again


@contextlib.asynccontextmanager
async def valet_serve(fake_llm, tmp_path: Path  # type: ignore[no-untyped-def]
                      ) -> AsyncIterator[tuple[FakeTwilio, FakeTelegram, aiohttp.ClientSession,
                                               int]]:
    """`valet serve` with the fake LLM, Twilio and Telegram servers, the owner on SMS and
    Telegram, Ana's British number allowed: (twilio, telegram, an HTTP session, the port)."""
    port = free_port()
    async with FakeTwilio() as twilio, FakeTelegram() as tg, aiohttp.ClientSession() as http:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_HTTP_PORT=str(port), VALET_PUBLIC_URL=PUBLIC,
                        VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url,
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url)
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\n"
            "sms:\n  allowed_countries: [US, GB]\n"  # Ana's number is British
            f"owner:\n  name: Sam\n  phone_numbers: ['{OWNER_PHONE}']\n"
            f"  telegram_ids: ['{OWNER_CHAT}']\n")
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", serve)
            yield twilio, tg, http, port
        finally:
            serve.terminate()
            await serve.wait()


@pytest.mark.parametrize("channel", ["sms", "telegram"])
async def test_questions_with_a_card_waiting_never_approve_it(fake_llm, tmp_path, channel):
    async with valet_serve(fake_llm, tmp_path) as (twilio, tg, http, port):
        say = sms_chat(http, twilio, f"http://127.0.0.1:{port}/sms/inbound") \
            if channel == "sms" else telegram_chat(tg)
        await story(say, fake_llm, twilio, tmp_path / "valet.db")
