"""The spec check the fake Bot API holds every request to (tests/fakes/telegram_spec.py) finds
what Telegram would refuse, and passes what it takes."""

from __future__ import annotations

import json

import pytest

from tests.fakes.telegram_spec import problems_of, spec

pytestmark = pytest.mark.skipif(spec() is None, reason="the Bot API spec is not beside the "
                                "project (../shared/data or VALET_REFERENCE_DATA)")

KEYBOARD = json.dumps({"inline_keyboard": [[{"text": "✅ Approve",
                                              "callback_data": "a:1:approve"}]]})


def test_a_message_as_python_telegram_bot_sends_it_passes():
    assert problems_of("sendMessage", {"chat_id": "42", "text": "<b>hi</b>",
                                       "parse_mode": "HTML", "reply_markup": KEYBOARD},
                       {"text"}) == []
    assert problems_of("setMyCommands", {
        "commands": json.dumps([{"command": "help", "description": "What I can do"}]),
        "scope": json.dumps({"type": "chat", "chat_id": 42})}) == []
    assert problems_of("answerCallbackQuery", {"callback_query_id": "cb-1", "text": "Done"}) == []


@pytest.mark.parametrize(("method", "params", "problem"), [
    ("sendMesage", {"chat_id": "1", "text": "x"}, "sendMesage: no such method"),
    ("sendMessage", {"text": "x"}, "sendMessage: missing chat_id"),
    ("sendMessage", {"chat_id": "1", "text": "x", "colour": "red"},
     "sendMessage: colour is no parameter of sendMessage"),
    ("sendMessage", {"chat_id": "1", "text": ""}, "sendMessage.text: 0 characters, not 1-4096"),
    ("sendMessage", {"chat_id": "1", "text": "x", "disable_notification": "maybe"},
     "sendMessage.disable_notification: 'maybe' is not Boolean"),
    ("sendMessage", {"chat_id": "1", "text": "x", "reply_markup": json.dumps(
        {"inline_keyboard": [[{"text": "a", "callback_data": "x" * 65}]]})}, "65 bytes, not 1-64"),
    ("sendMessage", {"chat_id": "1", "text": "x", "reply_markup": json.dumps(
        {"inline_keyboard": [{"text": "a"}]})}, "is not an array"),
    ("setMyCommands", {"commands": json.dumps([{"command": "help"}])},
     "BotCommand lacks description"),
    ("setMyCommands", {"commands": "[]", "scope": json.dumps({"type": "chats", "chat_id": 1})},
     "setMyCommands.scope"),
    ("answerCallbackQuery", {"callback_query_id": "1", "text": "x" * 201},
     "201 characters, not 0-200"),
])
def test_what_telegram_would_refuse_is_found(method, params, problem):
    found = problems_of(method, params)
    assert any(problem in p for p in found), found
