"""Loop modes: which turns need no tool is decided by a cheap local rule, never an LLM call."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from bot.contracts.envelopes import ButtonPress, Inbound, MediaRef
from bot.contracts.turn import Continue, Joined
from bot.turn.modes import choose_mode, is_small_talk


@pytest.mark.parametrize("text", ["hi", "Hello!", "hey there", "Good morning Valet",
                                  "thanks!", "Thank you so much", "merci", "bye, see you soon",
                                  "how are you?", "haha", "gn"])
def test_greetings_thanks_and_goodbyes_need_no_tool(text: str) -> None:
    assert is_small_talk(text, "Valet")


@pytest.mark.parametrize("text", [
    "yes", "ok", "great", "sure", "perfect, thanks",  # may agree to what was proposed
    "hi, what's the weather?", "thanks, and remind me at 5", "", "👍", "hi " * 9,
    "good morning, any mail?"])
def test_anything_else_gets_the_tools(text: str) -> None:
    assert not is_small_talk(text, "Valet")


def ctx(text: str = "hi", **fields) -> SimpleNamespace:  # type: ignore[no-untyped-def]
    return SimpleNamespace(msg=Inbound(user_id="u", channel="sms", text=text,
                                       received_at=datetime(2026, 1, 5, tzinfo=UTC), **fields))


def test_auto_answers_a_greeting_simply_and_everything_with_more_to_it_with_tools() -> None:
    assert choose_mode("auto", ctx(), Continue()) == "simple"  # type: ignore[arg-type]
    assert choose_mode("auto", ctx("book a table"), Continue()) == "react"  # type: ignore[arg-type]
    for more in ({"from_trigger": "task-1"}, {"button": ButtonPress("a1", "approve")},
                 {"media": (MediaRef("photo", "f1"),)}):
        assert choose_mode("auto", ctx(**more), Continue()) == "react"  # type: ignore[arg-type]
    late = Continue(joined=(Joined("c1", "send_email", {}, "Sent."),))
    assert choose_mode("auto", ctx("thanks"), late) == "react"  # type: ignore[arg-type]


def test_the_configured_mode_is_respected() -> None:
    assert choose_mode("react", ctx(), Continue()) == "react"  # type: ignore[arg-type]
    assert choose_mode("simple", ctx("book a table"), Continue()) == "simple"  # type: ignore[arg-type]
