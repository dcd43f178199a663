"""Replies to pending approvals: decisions by number, code or word of the closed table; never a
guess, never a verb or a name (issue 43)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.approvals.replies import Verdict, parse_reply
from bot.contracts.approvals import ApprovalRequest, args_hash

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def approval(n: int, summary: str, code: str, *, editable: bool = True) -> ApprovalRequest:
    args = {"n": n}
    return ApprovalRequest(id=f"a{n}", code=code, user_id="u", call_id=f"c{n}",
                           tool_name="send_email" if "mail" in summary else "book_flight",
                           arguments=args, args_hash=args_hash(args), summary=summary,
                           details={}, expires_at=NOW + timedelta(minutes=30), created_at=NOW,
                           allow_modification=editable)


EMAIL = approval(1, "Send email to team@example.com", "4821")
FLIGHT = approval(2, "Book flight LHR to JFK on 3 March", "7310")


def verdicts(parsed) -> dict[str, str]:
    return {d.approval_id: d.verdict.value for d in parsed.decisions}


@pytest.mark.parametrize("text,expected", [
    ("yes", "approve"), ("YES", "approve"), ("Yes please", "approve"), ("ok!", "approve"),
    ("4821", "approve"), ("go ahead", "approve"), ("👍", "approve"),
    ("no", "reject"), ("No thanks.", "reject"), ("cancel", "reject"), ("don't", "reject"),
    ("1 yes", "approve"), ("YES 4821", "approve"), ("4821 no", "reject"),
])
async def test_one_pending_simple_answers(text, expected):
    assert verdicts(await parse_reply(text, [EMAIL])) == {"a1": expected}


async def test_several_pending_by_number_and_code_partial_answers_allowed():
    both = [EMAIL, FLIGHT]
    assert verdicts(await parse_reply("1 yes 2 no", both)) == {"a1": "approve", "a2": "reject"}
    assert verdicts(await parse_reply("7310 no, 4821 yes", both)) == {"a1": "approve",
                                                                     "a2": "reject"}
    # A verdict before a position is no answer: "yes 1" (issue 43).
    assert (await parse_reply("yes 1, no 2", both)).unrelated
    assert verdicts(await parse_reply("2: yes", both)) == {"a2": "approve"}
    assert verdicts(await parse_reply("YES 7310", both)) == {"a2": "approve"}
    assert verdicts(await parse_reply("yes to all", both)) == {"a1": "approve", "a2": "approve"}
    assert verdicts(await parse_reply("cancel both", both)) == {"a1": "reject", "a2": "reject"}


async def test_a_bare_yes_with_several_pending_asks_which():
    parsed = await parse_reply("yes", [EMAIL, FLIGHT])
    assert parsed.decisions == [] and "Which one" in parsed.clarify
    assert "1 yes 2 no" in parsed.clarify


async def test_unknown_references_are_refused_not_guessed():
    parsed = await parse_reply("3 yes", [EMAIL, FLIGHT])
    assert parsed.decisions == [] and parsed.refused == ["3"]
    parsed = await parse_reply("YES 9999", [EMAIL, FLIGHT])
    assert parsed.refused == ["9999"]
    parsed = await parse_reply("1 yes 3 no", [EMAIL, FLIGHT])
    assert verdicts(parsed) == {"a1": "approve"} and parsed.refused == ["3"]


async def test_contradictions_ask():
    parsed = await parse_reply("1 yes 1 no", [EMAIL, FLIGHT])
    assert parsed.decisions == [] and parsed.clarify


async def test_free_text_naming_each_action_decides_nothing():
    """Issue 43: a verb or a name is never an answer ("send the email" once approved; so did
    "delete the email"): only the table's forms decide."""
    for text in ("approve the email, cancel the flight", "send the email and skip the flight",
                 "send it", "delete the email", "book the flight"):
        parsed = await parse_reply(text, [EMAIL, FLIGHT])
        assert parsed.unrelated and not parsed.decisions, text


async def test_changes_make_an_edit_only_in_the_documented_form():
    parsed = await parse_reply("change the subject to 'Q3 numbers'", [EMAIL])
    [decision] = parsed.decisions
    assert decision.verdict is Verdict.EDIT and "Q3 numbers" in decision.changes
    parsed = await parse_reply("change 2 the date to 4 March", [EMAIL, FLIGHT])
    assert [(d.approval_id, d.verdict) for d in parsed.decisions] == [("a2", Verdict.EDIT)]
    # A change inside a sentence is no answer (issue 43): it decides nothing.
    assert (await parse_reply("send it but make the subject 'Q3 numbers'", [EMAIL])).unrelated
    locked = approval(3, "Delete all notes", "1111", editable=False)
    parsed = await parse_reply("change it to only old notes", [locked])
    assert parsed.decisions == [] and "can't be changed" in parsed.clarify


async def test_unrelated_messages_are_not_swallowed():
    for text in ("what's the weather like?", "remind me at 5", "thanks for earlier"):
        assert (await parse_reply(text, [EMAIL])).unrelated


async def test_what_the_interpreter_once_read_decides_nothing():
    """Issue 43: no classifier is asked any more. What the rules once sent to the LLM
    ("yes I think so", "sounds good", a sentence that touches both requests) is not an
    answer of the table: a message like any other, nothing decided, nothing asked back."""
    for text in ("remind me at 1pm to call mom, no rush", "book lunch with Ana at 1pm",
                 "the email is fine I guess, but the flight with a window seat please, no wait",
                 "yes to the one about the trip I think", "yes I think so", "no, not now",
                 "no worries, what's on tomorrow?", "sounds good", "perfect"):
        parsed = await parse_reply(text, [EMAIL, FLIGHT])
        assert parsed.unrelated and not parsed.decisions and parsed.clarify is None, text
    assert (await parse_reply("I said no to coffee today", [EMAIL])).unrelated
    assert (await parse_reply("let's go to the store", [EMAIL])).unrelated


async def test_yes_words_with_courtesy_are_a_clear_answer():
    for text in ("yes please, go ahead", "ok do it, thanks", "Yes, thank you!"):
        assert verdicts(await parse_reply(text, [EMAIL])) == {"a1": "approve"}, text
    assert (await parse_reply("Yes, send it!", [EMAIL])).unrelated  # a verb: no answer
    assert verdicts(await parse_reply("no thanks, cancel", [EMAIL])) == {"a1": "reject"}
    assert (await parse_reply("yes no", [EMAIL])).decisions == []


async def test_a_digit_or_an_action_word_in_a_new_request_decides_nothing():
    for text in ("remind me in 1 minute to stretch", "book lunch with Ana at 1pm",
                 "remind me at 1pm to call mom, no rush"):
        parsed = await parse_reply(text, [EMAIL])
        assert parsed.unrelated and not parsed.decisions and parsed.clarify is None, text


def test_several_approvals_are_rendered_with_their_own_numbers():
    from channels.console.channel import render_prompt

    prompts = [EMAIL.prompt(1), FLIGHT.prompt(2)]
    rendered = [render_prompt(p).splitlines()[0] for p in prompts]
    # Numbered as /pending numbers them (issue 11: one style, `1.`).
    assert rendered[0].startswith("1. Send email") and rendered[1].startswith("2. Book flight")
    assert [p.position for p in prompts] == [1, 2]
