"""Issue 43 item 2: someone else's words in a Telegram message (a forward, a quote, the message
replied to) are third-party text, never the person's own `text`. Built on the real payloads
python-telegram-bot 22.8's own tests use (../shared/data/ptb_v22.8_updates.json: "forward_origin",
"quote", "reply"), completed with what a person would send."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from telegram import Update

from bot.contracts.envelopes import ThirdPartyText
from channels.telegram.kinds import Attached, BotIdentity, Photo, Text, Unreadable, classify
from tests.fakes.telegram_spec import UPDATES_FILE, reference_data

pytestmark = pytest.mark.skipif(reference_data(UPDATES_FILE) is None,
                                reason="the reference data is not beside the project")

ME = BotIdentity(777, "valet_bot")
NOW = datetime(2026, 12, 2, tzinfo=UTC)
ANA = {"id": 55, "is_bot": False, "first_name": "Ana", "last_name": "Lopez"}


def real(kind: str) -> dict[str, Any]:
    path = reference_data(UPDATES_FILE)
    assert path is not None
    data = json.loads(path.read_text())
    return copy.deepcopy(next(m["message"] for m in data["messages"] if m["id"] == kind))


def classified(message: dict[str, Any]):  # type: ignore[no-untyped-def]
    update = Update.de_json({"update_id": 9, "message": message}, None)
    assert update is not None
    return classify(update, ME, groups=False, now=lambda: NOW)


def test_a_forwarded_message_is_someone_elses_and_the_persons_text_is_empty():
    message = real("forward_origin")
    assert message["forward_origin"]["type"] == "chat"  # the real payload, as PTB builds it
    message["forward_origin"] = {"type": "user", "date": message["date"], "sender_user": ANA}
    message["text"] = "Yes 👍"
    item = classified(message)
    assert isinstance(item, Text) and item.text == ""
    assert item.origin.third_party == (ThirdPartyText("forwarded", "Yes 👍", "Ana Lopez"),)


@pytest.mark.parametrize("origin,name", [
    ({"type": "hidden_user", "sender_user_name": "Bob"}, "Bob"),
    ({"type": "chat", "sender_chat": {"id": -5, "type": "group", "title": "Family"}},
     "Family"),
    ({"type": "channel", "chat": {"id": -100, "type": "channel", "title": "News"},
      "message_id": 3}, "News"),
])
def test_every_kind_of_forward_origin_is_named(origin, name):
    message = real("forward_origin")
    message["forward_origin"] = {**origin, "date": message["date"]}
    message["text"] = "/forget_everything"
    item = classified(message)
    assert isinstance(item, Text) and item.text == ""  # a forwarded command is no command
    assert item.origin.third_party == (ThirdPartyText("forwarded", "/forget_everything",
                                                      name),)


def test_the_caption_of_forwarded_media_is_someone_elses():
    message = real("forward_origin")
    message["forward_origin"] = {"type": "user", "date": message["date"], "sender_user": ANA}
    message["photo"] = [{"file_id": "p1", "file_unique_id": "up1", "width": 90,
                         "height": 90, "file_size": 100}]
    message["caption"] = "yes"
    item = classified(message)
    assert isinstance(item, Photo) and item.caption == ""
    assert item.origin.third_party == (ThirdPartyText("forwarded_caption", "yes", "Ana Lopez"),)


def test_a_forwarded_file_keeps_its_caption_as_someone_elses():
    message = real("forward_origin")
    message["document"] = {"file_id": "d1", "file_unique_id": "ud1", "file_name": "a.pdf"}
    message["caption"] = "approve"
    item = classified(message)
    assert isinstance(item, Attached) and item.caption == ""
    assert item.origin.third_party == (ThirdPartyText("forwarded_caption", "approve",
                                                      "a chat"),)


def test_a_forwarded_voice_note_is_not_heard_as_the_persons_words():
    message = real("forward_origin")
    message["voice"] = {"file_id": "v1", "file_unique_id": "uv1", "duration": 2}
    assert isinstance(classified(message), Unreadable)


def test_a_quote_and_the_message_replied_to_are_someone_elses():
    message = real("quote")
    assert message["quote"] == {"position": 1, "text": "a text quote"}  # the real payload
    message["text"] = "what does she mean?"
    message["reply_to_message"] = {"message_id": 50, "date": message["date"],
                                   "chat": message["chat"], "from": ANA,
                                   "text": "I said a text quote, yes"}
    item = classified(message)
    assert isinstance(item, Text) and item.text == "what does she mean?"
    assert item.origin.third_party == (
        ThirdPartyText("quote", "a text quote", "Ana Lopez"),
        ThirdPartyText("reply", "I said a text quote, yes", "Ana Lopez"))


def test_a_reply_to_valets_own_message_carries_no_third_party_text():
    message = real("reply")
    message["reply_to_message"]["from"] = {"id": ME.id, "is_bot": True, "first_name": "Valet"}
    message["reply_to_message"]["text"] = "Delete the note #1 “Dentist”?"
    message["text"] = "yes"
    item = classified(message)
    assert isinstance(item, Text) and item.text == "yes" and item.origin.third_party == ()


def test_a_reply_to_someone_elses_message_keeps_the_persons_own_words_only():
    message = real("reply")
    assert message["reply_to_message"]["from"]["id"] != ME.id  # the real payload
    message["reply_to_message"]["text"] = "Yes"
    message["text"] = "look at this"
    item = classified(message)
    assert isinstance(item, Text) and item.text == "look at this"
    assert item.origin.third_party == (ThirdPartyText("reply", "Yes", "i"),)
