"""WhatsApp's pure parts: markdown in WhatsApp's marks, messages cut to Twilio's 1,600
characters, a button's id bound to its card, its buttons' words in the listener's language,
the 24-hour window, which template a message outside it takes, and the section's checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pydantic
import pytest

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage, PromptKind
from bot.contracts.options import Option
from channels.plain_cards import cards_in_words
from channels.registry import specs
from channels.whatsapp.cards import button_id, card_variables, content_for, press_of
from channels.whatsapp.lines import WhatsAppLines
from channels.whatsapp.render import split_messages, whatsapp_text
from channels.whatsapp.settings import WhatsAppSettings
from channels.whatsapp.window import by_template, in_session, is_open, template_kind
from channels.whatsapp.wire import from_wire, media_kind, on_wire
from persona import load_persona
from persona.lines import DEFAULT
from persona.speaking import speaking_to

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
CARD = ApprovalPrompt(id="ap1", code="4821", position=1, summary="send email to Ana")


def test_markdown_becomes_whatsapp_marks():
    assert whatsapp_text("**Done**: the *draft* is ~~old~~ [here](https://x.example/a)") == \
        "*Done*: the _draft_ is ~old~ here (https://x.example/a)"
    assert whatsapp_text("# Plan\n* one\n* two") == "*Plan*\n- one\n- two"
    assert whatsapp_text("```\ncode\n```") == "```\ncode\n```"


def test_a_long_text_is_cut_at_sentences_into_messages_twilio_takes():
    text = " ".join(f"Sentence {i} ends here." for i in range(300))
    parts = split_messages(text)
    assert len(parts) > 1 and all(len(p) <= 1600 for p in parts)
    assert all(p.endswith(".") for p in parts)
    assert " ".join(parts) == text


def test_a_button_names_its_card_and_option_and_nothing_else_is_a_press():
    yes = button_id(CARD, Option.APPROVE)
    assert yes == "a:ap1:approve"
    press = press_of(yes)
    assert press is not None and press.approval_id == "ap1" and press.choice is Option.APPROVE
    pairing = ApprovalPrompt(id="K7Q2", code="K7Q2", position=1, summary="let Bob in",
                             kind=PromptKind.PAIRING)
    assert press_of(button_id(pairing, Option.CANCEL)).kind is PromptKind.PAIRING
    for forged in ("", "a:ap1", "a::approve", "x:ap1:approve", "a:ap1:yes", "a:ap1:approve:1"):
        assert press_of(forged) is None, forged
    assert card_variables(CARD, "Send email to Ana?") == {
        "1": "Send email to Ana?", "2": "a:ap1:approve", "3": "a:ap1:cancel"}


def test_the_buttons_are_said_in_the_listeners_language():
    words = load_persona("default", line_groups=specs().line_groups()).words(WhatsAppLines)
    with speaking_to("fr"):
        french = content_for(words)
        elsewhere = words.whatsapp_elsewhere
    assert (french.language, french.approve, french.cancel) == ("fr", "✅ Oui", "✖️ Annuler")
    assert elsewhere.startswith("({channel} ne me laisse vous écrire en premier")
    english = content_for(words)
    assert (english.language, english.approve, english.cancel) == ("en", "✅ Yes", "✖️ Cancel")
    assert english.friendly_name != french.friendly_name  # a content per language


def test_the_window_is_24_hours_from_the_last_message_unless_twilio_closed_it():
    assert is_open(NOW - timedelta(hours=23, minutes=59), None, NOW)
    assert not is_open(NOW - timedelta(hours=24), None, NOW)
    assert not is_open(None, None, NOW)
    assert not is_open(NOW - timedelta(hours=1), NOW - timedelta(minutes=5), NOW)
    assert is_open(NOW - timedelta(minutes=5), NOW - timedelta(hours=1), NOW)  # wrote since


def message(**kw) -> OutboundMessage:
    return OutboundMessage(**{"id": 1, "user_id": "u1", "channel": "whatsapp",
                              "address": "+12125550123", "text": "Hi", **kw})


def test_each_kind_of_message_takes_its_template():
    assert template_kind(message(prompts=(CARD,), kind="notification")) == "card"
    assert template_kind(message(kind="notification", dedupe_key="task:7:x")) == "reminder"
    assert template_kind(message(kind="notification", dedupe_key="reply:9")) == "summary"
    assert template_kind(message(kind="notification", dedupe_key="paired:K7")) == "notice"
    assert template_kind(message(dedupe_key="reply:9")) == "notice"  # a reply, not a run's


def test_in_session_a_card_is_buttons_or_words_and_outside_a_template():
    pieces = in_session(message(prompts=(CARD,)), DEFAULT, "HX" + "1" * 32)
    assert [p.form for p in pieces] == ["text", "card"]
    assert pieces[1].variables["1"] == "Send email to Ana?"
    [words] = in_session(message(prompts=(CARD,)), DEFAULT, None)
    assert words.body == "Hi\n\nSend email to Ana? Answer yes or no, or tell me what to change."
    [template] = by_template(message(prompts=(CARD,)), DEFAULT, "HX" + "2" * 32)
    assert template.content_sid == "HX" + "2" * 32
    assert template.variables["2"] == "a:ap1:approve"
    assert template.variables["1"].startswith("Hi\n\nSend email to Ana?")


def test_several_cards_in_words_carry_their_codes():
    other = ApprovalPrompt(id="ap2", code="5930", position=2, summary="book a flight",
                           allow_modification=False)
    assert cards_in_words((CARD, other), DEFAULT) == (
        "4821: Send email to Ana? Answer yes or no, or tell me what to change.\n"
        "5930: Book a flight? Answer yes or no.")


def test_addresses_and_media_kinds_on_the_wire():
    assert on_wire("+12125550123") == "whatsapp:+12125550123"
    assert from_wire("whatsapp:+12125550123") == "+12125550123"
    assert [media_kind(m) for m in ("image/jpeg", "audio/ogg; codecs=opus", "audio/mpeg",
                                    "image/webp", "video/mp4", "application/pdf")] == \
        ["photo", "voice", "audio", "sticker", "video", "document"]


def test_a_template_is_a_content_sid_for_a_known_kind():
    assert WhatsAppSettings(templates={"reminder": "HX" + "a" * 32}).templates
    with pytest.raises(pydantic.ValidationError, match="not a kind of message"):
        WhatsAppSettings(templates={"birthday": "HX" + "a" * 32})
    with pytest.raises(pydantic.ValidationError, match="is not a content SID"):
        WhatsAppSettings(templates={"reminder": "SM123"})
