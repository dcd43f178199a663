"""Replies to pending approvals: decisions by number, code, word or name; never a guess."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.approvals.replies import Verdict, interpret_prompt, parse_reply
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
    ("send it", "approve"), ("go ahead", "approve"), ("👍", "approve"),
    ("no", "reject"), ("No thanks.", "reject"), ("cancel", "reject"), ("don't", "reject"),
    ("1 yes", "approve"), ("YES 4821", "approve"), ("4821 no", "reject"),
])
async def test_one_pending_simple_answers(text, expected):
    assert verdicts(await parse_reply(text, [EMAIL])) == {"a1": expected}


async def test_several_pending_by_number_and_code_partial_answers_allowed():
    both = [EMAIL, FLIGHT]
    assert verdicts(await parse_reply("1 yes 2 no", both)) == {"a1": "approve", "a2": "reject"}
    assert verdicts(await parse_reply("yes 1, no 2", both)) == {"a1": "approve", "a2": "reject"}
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


async def test_free_text_naming_each_action():
    parsed = await parse_reply("approve the email, cancel the flight", [EMAIL, FLIGHT])
    assert verdicts(parsed) == {"a1": "approve", "a2": "reject"}
    parsed = await parse_reply("send the email and skip the flight", [EMAIL, FLIGHT])
    assert verdicts(parsed) == {"a1": "approve", "a2": "reject"}


async def test_changes_make_an_edit():
    parsed = await parse_reply("send it but make the subject 'Q3 numbers'", [EMAIL])
    [decision] = parsed.decisions
    assert decision.verdict is Verdict.EDIT and "Q3 numbers" in decision.changes
    parsed = await parse_reply("change the subject to Q3", [EMAIL])
    assert parsed.decisions[0].verdict is Verdict.EDIT
    locked = approval(3, "Delete all notes", "1111", editable=False)
    parsed = await parse_reply("yes but change it to only old notes", [locked])
    assert parsed.decisions == [] and "can't be changed" in parsed.clarify


async def test_unrelated_messages_are_not_swallowed():
    for text in ("what's the weather like?", "remind me at 5", "thanks for earlier"):
        assert (await parse_reply(text, [EMAIL])).unrelated


async def test_the_interpreter_helps_and_is_validated():
    async def good(text, pending):
        return '```json\n{"decisions": [{"number": 2, "decision": "edit", "changes": "window"}]}'

    text = "the email is fine I guess, but the flight with a window seat please, no wait"
    parsed = await parse_reply(text, [EMAIL, FLIGHT], interpret=good)
    assert parsed.decisions[0].approval_id == "a2" and parsed.decisions[0].changes == "window"
    assert "team@example.com" in interpret_prompt(text, [EMAIL, FLIGHT])


async def test_an_interpreter_that_fails_or_is_unsure_leaves_the_message_a_new_request():
    """Issue [truth] 3: a waiting approval never eats a new request. Whatever the interpreter
    does short of a valid, sure answer, the message goes to the loop (`unrelated`) and nothing
    is decided; `unsure` lets a reminder of what waits follow the answer."""
    async def bad(text, pending):  # an action that does not exist
        return ('{"answers": true, "sure": true, "decisions": [{"number": 7, '
                '"decision": "approve"}]}')

    async def garbage(text, pending):
        return "I think they mean yes"

    async def down(text, pending):
        raise TimeoutError("the LLM did not answer")

    async def twice(text, pending):
        return ('{"decisions": [{"number": 1, "decision": "approve"}, '
                '{"number": 1, "decision": "reject"}]}')

    async def not_sure(text, pending):
        return ('{"answers": true, "sure": false, "decisions": [{"number": 1, '
                '"decision": "reject"}]}')

    for text in ("remind me at 1pm to call mom, no rush", "book lunch with Ana at 1pm",
                 "the email is fine I guess, but the flight with a window seat please, no wait"):
        for interpreter in (bad, garbage, down, twice):
            parsed = await parse_reply(text, [EMAIL, FLIGHT], interpret=interpreter)
            assert parsed.unrelated and parsed.unsure and not parsed.decisions, (text, parsed)
            assert parsed.clarify is None
        parsed = await parse_reply(text, [EMAIL], interpret=not_sure)
        assert parsed.unrelated and parsed.unsure and not parsed.decisions


async def test_which_one_only_for_a_clear_answer_to_one_of_several():
    async def answers_unsure(text, pending):
        return '{"answers": true, "sure": false, "decisions": []}'

    async def something_else(text, pending):
        return '{"answers": false, "sure": true, "decisions": []}'

    text = "yes to the one about the trip I think"
    parsed = await parse_reply(text, [EMAIL, FLIGHT], interpret=answers_unsure)
    assert parsed.decisions == [] and "Which one" in parsed.clarify
    parsed = await parse_reply(text, [EMAIL, FLIGHT], interpret=something_else)
    assert parsed.unrelated and not parsed.unsure and parsed.clarify is None


async def test_a_sentence_that_starts_with_an_answer_needs_the_interpreter_to_be_one():
    async def says(verdict):
        async def interpret(text, pending):
            return ('{"answers": true, "sure": true, "decisions": [{"number": 1, "decision": "'
                    + verdict + '"}]}')
        return interpret

    assert verdicts(await parse_reply("yes I think so", [EMAIL],
                                      interpret=await says("approve"))) == {"a1": "approve"}
    assert verdicts(await parse_reply("no, not now", [EMAIL],
                                      interpret=await says("reject"))) == {"a1": "reject"}
    # Without an interpreter that is sure of it, a leading yes/no is no answer.
    for text in ("yes I think so", "no, not now", "no worries, what's on tomorrow?"):
        assert (await parse_reply(text, [EMAIL, FLIGHT])).unrelated
    assert (await parse_reply("I said no to coffee today", [EMAIL])).unrelated
    assert (await parse_reply("let's go to the store", [EMAIL])).unrelated


async def test_yes_words_with_courtesy_are_a_clear_answer():
    for text in ("yes please, go ahead", "ok do it, thanks", "Yes, send it!"):
        assert verdicts(await parse_reply(text, [EMAIL])) == {"a1": "approve"}, text
    assert verdicts(await parse_reply("no thanks, cancel", [EMAIL])) == {"a1": "reject"}
    assert (await parse_reply("yes no", [EMAIL])).decisions == []


async def test_a_digit_or_an_action_word_in_a_new_request_decides_nothing():
    for text in ("remind me in 1 minute to stretch", "book lunch with Ana at 1pm",
                 "remind me at 1pm to call mom, no rush"):
        parsed = await parse_reply(text, [EMAIL])
        assert parsed.unrelated and not parsed.decisions and parsed.clarify is None, text


def test_several_approvals_are_rendered_with_their_own_numbers():
    from channels.console import render_prompt

    prompts = [EMAIL.prompt(1), FLIGHT.prompt(2)]
    rendered = [render_prompt(p).splitlines()[0] for p in prompts]
    # Numbered as /pending numbers them (issue 11: one style, `1.`).
    assert rendered[0].startswith("1. Send email") and rendered[1].startswith("2. Book flight")
    assert [p.position for p in prompts] == [1, 2]
