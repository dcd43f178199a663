"""What real Telegram sends: every update and message kind python-telegram-bot 22.8 models, as
its own tests build them (126 payloads: ../shared/data/ptb_v22.8_updates.json), read back and
built again with its own classes, each from a person of its own in a private chat with the bot,
through getUpdates into Valet (the real channel, gateway and outbox, the fake LLM).

What each message is, is read from the Bot API's own spec (../shared/data/
telegram_bot_api_spec.json), not from Valet's code: a field the spec describes as "Message is
..." or "Message contains ..." is something a person sent; text and captions are words to read;
everything else is about the chat (a service message: a pin, the auto-delete timer, a chat
background, a member joining...) or about the message (a reply, an edit, a forward). So:

- a service message gets no reply at all, and costs no LLM call;
- text is answered; a caption is read with its media (the model gets the caption);
- something Valet cannot read gets one short line, and no LLM call;
- an audio file is not a voice note;
- every update is confirmed, and every request Valet makes is one the Bot API takes (the fake
  holds each to the spec)."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from telegram import Audio, Chat, Message, Update, User

from persona.lines import DEFAULT
from tests.e2e.telegram_harness import Harness, bot_messages
from tests.fakes.fake_openai import Reply
from tests.fakes.telegram_spec import UPDATES_FILE, reference_data, spec
from tests.helpers import said

pytestmark = pytest.mark.skipif(
    reference_data(UPDATES_FILE) is None or spec() is None,
    reason="the reference data is not beside the project (../shared/data or "
           "VALET_REFERENCE_DATA)")

FIRST_CHAT = 5000
# "Message is a service message about ..." is a service message all the same.
_CONTENT = re.compile(r"^Optional\. (The )?[Mm]essage (is|contains) (?!a service message)")


def payloads() -> dict[str, Any]:
    path = reference_data(UPDATES_FILE)
    assert path is not None
    return json.loads(path.read_text())


def spec_kind(message: dict[str, Any]) -> str:
    """"text", "caption", "content" or "service", by what the Bot API spec says of each field
    the message carries."""
    api = spec()
    assert api is not None
    described = {f["name"]: f["description"] for f in api["types"]["Message"]["fields"]}
    carried = {k for k, v in message.items() if v not in (None, False, [], {})}
    if "text" in carried:
        return "text"
    if "caption" in carried:
        return "caption"
    content = {k for k in carried if _CONTENT.match(described.get(k, ""))}
    return "content" if content else "service"


def answer(body: dict[str, Any]) -> Reply:
    last = said(body["messages"][-1]["content"])
    text = last if isinstance(last, str) else " ".join(
        p.get("text", "") for p in last if isinstance(p, dict))
    return Reply(content=f"re: {text}")


def in_private_chat(data: dict[str, Any], chat: int) -> dict[str, Any]:
    """The message read by python-telegram-bot, and built again by it as sent to the bot by a
    person of its own in a private chat."""
    message = Message.de_json(data, None)
    assert message is not None, data
    rebuilt = message.to_dict()
    rebuilt["chat"] = Chat(chat, Chat.PRIVATE, first_name=f"P{chat}").to_dict()
    rebuilt["from"] = User(chat, f"P{chat}", False).to_dict()
    again = Message.de_json(rebuilt, None)
    assert again is not None and again.chat.type == Chat.PRIVATE
    return again.to_dict()


async def known(h: Harness, chat: int) -> None:
    now = datetime.now(UTC)
    await h.app.users.ensure(f"k{chat}", display_name=f"P{chat}", at=now)
    await h.app.identities.link("telegram", str(chat), f"k{chat}", at=now)
    h.tg.started(chat)


async def settled(h: Harness, timeout: float = 60.0) -> None:
    """Every update confirmed, every turn over, every reply sent."""
    deadline = time.monotonic() + timeout
    while h.tg.unconfirmed():
        assert time.monotonic() < deadline, "updates never confirmed"
        await h.tg.wait_for(lambda: not h.tg.unconfirmed(), timeout=timeout)
    await h.app.gateway.wait_idle()


async def test_every_message_kind_python_telegram_bot_models_is_answered_as_what_it_is(
        start_telegram, fake_llm):
    fake_llm.responder = answer
    h = await start_telegram(vision=True)
    chats = itertools.count(FIRST_CHAT)
    sent: dict[int, tuple[str, str, dict[str, Any]]] = {}  # chat -> (payload id, kind, msg)
    for item in payloads()["messages"]:
        chat = next(chats)
        await known(h, chat)
        message = in_private_chat(item["message"], chat)
        sent[chat] = (item["id"], spec_kind(item["message"]), message)
        h.tg.push("message", message)
    await settled(h)

    kinds = Counter(kind for _, kind, _ in sent.values())
    print(f"\n{len(sent)} message kinds: {dict(kinds)}")
    asked = [json.dumps(said(r["messages"][-1]["content"])) for r in fake_llm.requests]
    wrong = []
    for chat, (name, kind, message) in sent.items():
        got = bot_messages(h.tg, chat)
        answered = [t for t in got if t.startswith("re: ")]
        words = message.get("text") or message.get("caption") or ""
        if kind == "service":
            ok = got == []
        elif kind == "text":
            ok = got == [f"re: {words}"]
        elif kind == "caption":  # read with the media: the model had the caption
            ok = len(answered) == 1 and words in answered[0] and len(got) <= 2 \
                and any(words in a for a in asked)
        else:  # something Valet cannot read: one line of its own, no turn
            ok = len(got) == 1 and not answered
        if not ok:
            wrong.append(f"{name} ({kind}): {got}")
    assert wrong == [], "\n".join(wrong)
    assert len(fake_llm.requests) == kinds["text"] + kinds["caption"]
    assert kinds["service"] >= 40 and kinds["caption"] >= 6  # the data is what it says
    # An audio file is not a voice note.
    audio_chat = next(c for c, (name, _, _) in sent.items() if name == "audio")
    assert DEFAULT.telegram_cannot_hear not in bot_messages(h.tg, audio_chat)
    assert bot_messages(h.tg, audio_chat)[0] == DEFAULT.telegram_cannot_hear_audio_caption
    # Nothing was refused by the Bot API (the fake checks each request against the spec).
    assert h.tg.spec_problems == []


async def test_every_update_kind_is_confirmed_and_only_messages_and_buttons_are_answered(
        start_telegram, fake_llm):
    fake_llm.responder = answer
    h = await start_telegram()
    chats = itertools.count(FIRST_CHAT)
    to_person: dict[int, str] = {}
    for item in payloads()["updates"]:
        raw = dict(item["update"])
        raw.pop("update_id")
        [(kind, payload)] = raw.items()
        chat = next(chats)
        if kind == "message":
            await known(h, chat)
            payload = in_private_chat(payload, chat)
            to_person[chat] = item["id"]
        elif kind == "callback_query":
            await known(h, chat)
            payload = {**payload, "from": User(chat, f"P{chat}", False).to_dict()}
            if payload.get("message"):
                payload["message"] = in_private_chat(payload["message"], chat)
        update = Update.de_json({"update_id": 1, kind: payload}, None)
        assert update is not None, item["id"]  # python-telegram-bot reads every kind
        h.tg.push(kind, update.to_dict()[kind])
    await settled(h)

    assert h.tg.unconfirmed() == 0
    answered = {c: bot_messages(h.tg, c) for c in range(FIRST_CHAT, next(chats))
                if bot_messages(h.tg, c)}
    assert answered == {c: ["re: Text"] for c in to_person}
    # Both button presses (one on a message, one without: an inline message) are answered at
    # once, as buttons Valet cannot read.
    toasts = [c.params.get("text") for c in h.tg.called("answerCallbackQuery")]
    assert toasts == [DEFAULT.telegram_invalid_button] * 2
    assert h.tg.spec_problems == []


async def test_an_audio_file_is_transcribed_as_a_file_with_its_caption_not_as_a_voice_note(
        start_telegram, fake_llm):
    fake_llm.responder = answer
    fake_llm.transcript = "Here comes the sun, little darling."
    h = await start_telegram(transcription=True)
    chat = FIRST_CHAT
    await known(h, chat)
    h.tg.files["song-1"] = b"ID3 fake mp3"
    message = Message(1, datetime.now(UTC), Chat(chat, Chat.PRIVATE, first_name="P"),
                      from_user=User(chat, "P", False), caption="what song is this?",
                      audio=Audio("song-1", "usong-1", 185, performer="The Beatles",
                                  title="Here Comes the Sun", mime_type="audio/mpeg",
                                  file_size=12))
    h.tg.push("message", message.to_dict())
    await settled(h)
    [reply] = bot_messages(h.tg, chat)
    assert not reply.startswith("🎤")  # a voice note's words head its reply; a song's do not
    assert fake_llm.transcription_files == ["audio.mp3"]
    asked = said(fake_llm.requests[0]["messages"][-1]["content"])
    assert asked == ("[audio file “The Beatles - Here Comes the Sun”; its words: “Here comes the "
                     "sun, little darling.”] what song is this?")
    # Redone after a crash, the turn would not transcribe it again: its words are kept.
    row = await h.app.db.fetchrow("SELECT text, media FROM inbox WHERE address = $1", str(chat))
    assert row["text"] == "what song is this?"
    assert json.loads(row["media"])[0]["heard"] == "Here comes the sun, little darling."
    assert h.tg.spec_problems == []
