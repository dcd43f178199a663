"""One table of words for a prompt's options, whatever the channel: a button's data, an SMS
digit, a typed yes or no; and a pairing prompt is a kind of its own, on every wire."""

from __future__ import annotations

import json

import pytest

from bot.approvals.replies import Verdict, parse_reply
from bot.contracts.envelopes import ApprovalPrompt, ButtonPress, PromptKind
from bot.contracts.options import APPROVE_WORDS, CANCEL_WORDS, Option
from bot.people.access import pairing_prompt
from channels.telegram.kinds import callback_data, parse_callback, pressed
from tests.unit.test_approval_replies import EMAIL


@pytest.mark.parametrize(("word", "option"), [
    ("approve", Option.APPROVE), ("Yes", Option.APPROVE), (" ok ", Option.APPROVE),
    ("1", Option.APPROVE), ("👍", Option.APPROVE),
    ("cancel", Option.CANCEL), ("NO", Option.CANCEL), ("reject", Option.CANCEL),
    ("2", Option.CANCEL), ("edit", Option.EDIT),
    ("maybe", None), ("", None), ("3", None)])
def test_every_word_names_at_most_one_option(word, option):
    assert Option.parse(word) is option
    assert ButtonPress("a1", word).choice is option


async def test_a_typed_yes_or_no_means_what_the_options_table_says():
    for word in APPROVE_WORDS + CANCEL_WORDS:
        [decision] = (await parse_reply(word, [EMAIL])).decisions
        assert decision.verdict is Verdict.of(Option.parse(word))  # type: ignore[arg-type]


def test_options_travel_as_their_words():
    prompt = ApprovalPrompt(id="a1", code="4821", position=1, summary="Send it")
    data = json.loads(json.dumps(prompt.to_json()))  # as the outbox stores it
    assert data["options"] == ["approve", "edit", "cancel"] and data["kind"] == "approval"
    assert ApprovalPrompt.from_json(data) == prompt
    old = {k: v for k, v in data.items() if k != "kind"}  # stored before kinds existed
    assert ApprovalPrompt.from_json(old).kind is PromptKind.APPROVAL


def test_a_pairing_prompt_is_its_own_kind_and_its_buttons_say_so():
    prompt = pairing_prompt("K7M2Q4")
    assert (prompt.kind, prompt.id, prompt.options) == (
        PromptKind.PAIRING, "K7M2Q4", (Option.APPROVE, Option.CANCEL))
    assert ApprovalPrompt.from_json(json.loads(json.dumps(prompt.to_json()))) == prompt
    data = callback_data(prompt.id, Option.APPROVE, prompt.kind)
    assert data == "p:K7M2Q4:approve"
    assert pressed(data) == (PromptKind.PAIRING, "K7M2Q4", "approve")
    assert parse_callback(data) is None  # not an approval's button
    assert pressed(callback_data("f" * 32, "cancel")) == (PromptKind.APPROVAL, "f" * 32,
                                                          "cancel")
    assert pressed("x:1:approve") is None and pressed(None) is None
