"""Issue 43 against a real `valet serve` (the fake LLM, Twilio and Telegram servers, SQLite), by
SMS and on Telegram: with a card waiting, the red team's replies decide nothing (inverted
verbs: "delete the message" with a send card, "save the note" with a delete card; sarcasm:
"yeah right", "oh sure"; "yes 1"), even when the model's answer to them is the JSON an
"approve everything" classifier would give. On Telegram a forwarded "Yes 👍" (a real
`forward_origin` payload) approves nothing either. Each of those answers ends with the line
that says what waits and how to answer. Then "yes", the code, the code with a verdict and the
digit (SMS) or the button (Telegram) each still approve exactly once."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_questions_never_approve import (
    ANA,
    OWNER_CHAT,
    OWNER_PHONE,
    PUBLIC,
    STATUS,
    notes,
    until,
    valet_serve,
)
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_telegram import FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.fakes.telegram_spec import UPDATES_FILE, reference_data

APPROVE_ALL = ('{"answers": true, "sure": true, "decisions": [{"number": 1, '
               '"decision": "approve"}]}')
NOT_ANSWERS = ("delete the message", "send it to me", "text me", "yeah right", "oh sure",
               "yes 1", "Yes, send it!")
Say = Callable[[str], Awaitable[str]]


def pending_codes(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute(
            "SELECT code FROM approvals WHERE status = 'pending' ORDER BY created_at")]


class Sms:
    def __init__(self, http: aiohttp.ClientSession, twilio: FakeTwilio, url: str) -> None:
        self.http, self.twilio, self.url = http, twilio, url
        self.sids = itertools.count(1)

    async def say(self, text: str, *, expect: str | None = None) -> str:
        """What Valet sent back: the first message, or everything up to the one that says
        `expect` (a card may follow a progress line or another part)."""
        before = len(self.twilio.bodies_to(OWNER_PHONE))
        params = inbound_params(OWNER_PHONE, text, sid=f"SM{next(self.sids):032d}")
        async with await post_signed(self.http, self.url, PUBLIC + "/sms/inbound", params,
                                     self.twilio.auth_token) as response:
            assert response.status == 200

        def since() -> str:
            return "\n".join(self.twilio.bodies_to(OWNER_PHONE)[before:])

        await until(lambda: len(self.twilio.bodies_to(OWNER_PHONE)) > before
                    and (expect is None or expect in since()), f"a reply to {text}")
        await asyncio.sleep(0)  # the rest of a reply cut in parts follows at once
        return since()


class Telegram:
    def __init__(self, tg: FakeTelegram) -> None:
        self.tg = tg

    async def _answered(self, push: Callable[[], Any], what: str, expect: str | None) -> str:
        """What Valet sent back: the first reply, or everything up to the one that says
        `expect`; a tool's status line ("✓ sending your message", shown when a loaded machine
        makes the tool slow) is not a reply."""
        before = len(self.tg.sent(OWNER_CHAT))
        push()

        def since() -> str:  # the replies: a tool's status line is not one (STATUS)
            return "\n".join(m.text for m in self.tg.sent(OWNER_CHAT)[before:]
                             if not STATUS.match(m.text))

        await until(lambda: bool(since()) and (expect is None or expect in since()), what)
        return since()

    async def say(self, text: str, *, expect: str | None = None) -> str:
        return await self._answered(lambda: self.tg.user_says(OWNER_CHAT, text),
                                    f"a reply to {text}", expect)

    async def forward(self, text: str, *, expect: str | None = None) -> str:
        """Ana's message forwarded by the owner: the real payload python-telegram-bot's tests
        build, from the owner's chat, its origin Ana."""
        path = reference_data(UPDATES_FILE)
        assert path is not None
        real = next(m["message"] for m in json.loads(path.read_text())["messages"]
                    if m["id"] == "forward_origin")
        message = copy.deepcopy(real)
        message.update(
            message_id=10_000 + len(self.tg.sent()), date=int(time.time()), text=text,
            chat={"id": OWNER_CHAT, "type": "private", "first_name": "Sam"},
            **{"from": {"id": OWNER_CHAT, "is_bot": False, "first_name": "Sam"}})
        message["forward_origin"] = {"type": "user", "date": int(time.time()) - 60,
                                     "sender_user": {"id": 55, "is_bot": False,
                                                     "first_name": "Ana"}}
        return await self._answered(lambda: self.tg.push("message", message),
                                    f"a reply to the forwarded {text}", expect)

    def press_approve(self) -> None:
        card = next(m for m in reversed(self.tg.sent(OWNER_CHAT)) if m.buttons)
        [approve] = [b for b in card.buttons if b["callback_data"].endswith(":approve")]
        self.tg.user_presses(OWNER_CHAT, card.message_id, approve["callback_data"])


async def not_answers(say: Say, fake_llm, twilio: FakeTwilio, db: Path,  # type: ignore[no-untyped-def]
                      texts: tuple[str, ...], sent: int) -> None:
    for text in texts:
        fake_llm.script(Reply(content=APPROVE_ALL))
        answer = await say(text)
        assert "Still waiting for your OK" in answer and answer.endswith("Reply YES or NO."), \
            (text, answer)
        assert len(twilio.bodies_to(ANA)) == sent, text
        assert notes(db) == ["Dentist"]


async def text_ana(channel: Sms | Telegram, fake_llm, words: str) -> None:  # type: ignore[no-untyped-def]
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {"to": "Ana",
                                                                   "text": words})]))
    card = await channel.say(f"text ana {words}", expect=words)  # the card, after progress
    assert words in card


async def story(channel: Sms | Telegram, fake_llm, twilio: FakeTwilio, db: Path) -> None:  # type: ignore[no-untyped-def]
    say = channel.say
    fake_llm.script(
        Reply(tool_calls=[ToolCall("save_contact", {"name": "Ana", "phone": ANA})]),
        Reply(content="Saved Ana."),
        Reply(tool_calls=[ToolCall("take_note", {"title": "Dentist", "body": "Tue 3pm"})]),
        Reply(content="Noted."))
    assert (await say("Ana's number is +44 7700 900123")).startswith("Saved Ana.")
    assert (await say("note: dentist tue 3pm")).startswith("Noted.")

    # A message to Ana waits: inverted verbs, sarcasm, "yes 1", a forward decide nothing.
    await text_ana(channel, fake_llm, "Running late, 10 min")
    await not_answers(say, fake_llm, twilio, db, NOT_ANSWERS, sent=0)
    if isinstance(channel, Telegram):
        fake_llm.script(Reply(content=APPROVE_ALL))
        answer = await channel.forward("Yes 👍")
        assert answer.endswith("Reply YES or NO.") and twilio.bodies_to(ANA) == []
    fake_llm.script(Reply(content="Sent it."))
    assert "Sent it." in await say("yes")
    await until(lambda: len(twilio.bodies_to(ANA)) == 1, "the message to Ana")

    # The note's deletion waits: "save the note", a forwarded yes delete nothing.
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": 1})]))
    assert "Dentist" in await say("delete the dentist note")
    await not_answers(say, fake_llm, twilio, db, ("save the note", "email me", "book it"),
                      sent=1)
    if isinstance(channel, Telegram):
        fake_llm.script(Reply(content=APPROVE_ALL))
        await channel.forward("Yes 👍")
        assert notes(db) == ["Dentist"]
    [code] = pending_codes(db)
    fake_llm.script(Reply(content="Deleted."))
    assert "Deleted." in await say(f"yes {code}")  # a verdict and the code
    assert notes(db) == []

    # The code alone approves its card.
    await text_ana(channel, fake_llm, "On my way")
    [code] = pending_codes(db)
    fake_llm.script(Reply(content="Sent again."))
    assert "Sent again." in await say(code)
    await until(lambda: len(twilio.bodies_to(ANA)) == 2, "the second message to Ana")

    # The digit (SMS) or the button (Telegram) approves its card.
    await text_ana(channel, fake_llm, "Parking now")
    fake_llm.script(Reply(content="Third one sent."))
    if isinstance(channel, Sms):
        assert "Third one sent." in await say("1")
    else:
        channel.press_approve()
        await until(lambda: any("Third one sent." in m.text for m in channel.tg.sent(OWNER_CHAT)),
                    "the answer to the button")
    await until(lambda: len(twilio.bodies_to(ANA)) == 3, "the third message to Ana")

    # Each exactly once: nothing waits, a second "yes" is a message.
    assert pending_codes(db) == []
    fake_llm.script(Reply(content="Nothing else to do."))
    assert (await say("yes")).startswith("Nothing else to do.")
    assert len(twilio.bodies_to(ANA)) == 3
    assert len(set(twilio.bodies_to(ANA))) == 3  # three different messages, each sent once


@pytest.mark.skipif(reference_data(UPDATES_FILE) is None,
                    reason="the reference data is not beside the project")
@pytest.mark.parametrize("channel", ["sms", "telegram"])
async def test_only_an_answer_of_the_table_approves_against_valet_serve(fake_llm, tmp_path,
                                                                         channel):
    async with valet_serve(fake_llm, tmp_path) as (twilio, tg, http, port):
        chat = Sms(http, twilio, f"http://127.0.0.1:{port}/sms/inbound") \
            if channel == "sms" else Telegram(tg)
        await story(chat, fake_llm, twilio, tmp_path / "valet.db")
