"""Issue 34 item 1, issue 43 item 1: the table of real phrasings
(tests/unit/approval_phrasings.py) is what the closed answer grammar says, and no question
ever approves. (The property tests over generated replies: tests/unit/test_answer_grammar.py.)"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.approvals.replies import ParsedReply, Verdict, parse_reply
from bot.contracts.answer_words import ENGLISH, answer_words
from tests.unit.approval_phrasings import ALL, ANA, EMAIL, NOTE, PHRASINGS, WAITING


def test_the_table_holds_enough_real_phrasings():
    assert len(PHRASINGS) >= 150
    assert len({(text, waiting, langs) for text, waiting, _, langs in PHRASINGS}) == \
        len(PHRASINGS), "a phrasing is listed twice"


def outcome(parsed: ParsedReply, waiting: str) -> str:
    if parsed.clarify:
        return "ask"
    if parsed.unrelated:
        return "new"
    if len(WAITING[waiting]) == 1:
        [decision] = parsed.decisions
        return decision.verdict.value
    position = {a.id: i for i, a in enumerate(WAITING[waiting], 1)}
    return " ".join(f"{position[d.approval_id]}:{d.verdict.value}"
                    for d in sorted(parsed.decisions, key=lambda d: position[d.approval_id]))


@pytest.mark.parametrize("text,waiting,expected,langs", PHRASINGS,
                         ids=[f"{w}:{t}" for t, w, _, _ in PHRASINGS])
async def test_each_phrasing_does_what_the_table_says(text, waiting, expected, langs):
    parsed = await parse_reply(text, list(WAITING[waiting]), words=answer_words(langs))
    assert outcome(parsed, waiting) == expected, parsed
    if expected in ("new", "ask"):
        assert parsed.decisions == []


# --- no question ever approves ------------------------------------------------------------

PENDING = [[NOTE], [ANA], [EMAIL], [ANA, NOTE]]
YES = sorted(ENGLISH.yes | answer_words(ALL).yes)
# Question words (the grammar has none: any word outside its table is no answer).
ASKING = ["what", "what's", "which", "when", "where", "who", "why", "how", "is", "are", "can",
          "could", "would", "should", "does", "did", "may", "qué", "cuándo", "dónde",
          "quoi", "quand", "est-ce que", "was", "wann", "wo", "ist"]
CARD_WORDS = ["note", "dentist", "ana", "email", "send", "delete", "it", "the", "1", "4821",
              "please", "thanks", "now", "today", "message", "subject", "q3"]
word = st.sampled_from(YES + CARD_WORDS + ["and", "but", ",", ".", "!", "so", "well"])


def _approves(parsed: ParsedReply) -> bool:
    return any(d.verdict in (Verdict.APPROVE, Verdict.EDIT) for d in parsed.decisions)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.lists(word, max_size=5), after=st.lists(word, max_size=6),
       pending=st.sampled_from(PENDING), mark=st.sampled_from(["?", " ?", "¿", "?!"]))
async def test_a_message_with_a_question_mark_never_approves(before, after, pending, mark):
    text = " ".join(before) + mark + " " + " ".join(after)
    if mark == "¿":
        text = " ".join(before) + " ¿" + " ".join(after) + "?"
    parsed = await parse_reply(text, list(pending), words=answer_words(ALL))
    assert not _approves(parsed) and parsed.unrelated and parsed.question, (text, parsed)


@settings(max_examples=400)
@given(lead=st.lists(st.sampled_from(YES + ["well", "hmm", "oh", "please"]), max_size=3),
       asking=st.sampled_from(ASKING), rest=st.lists(word, max_size=6),
       pending=st.sampled_from(PENDING))
async def test_a_clause_opening_with_a_question_word_never_approves(lead, asking, rest,
                                                                    pending):
    """"ok what does the note say", "yes, is it today", "sure but when": no question mark,
    still a question."""
    for joiner in (" ", ", ", " but ", ". "):
        text = " ".join(lead) + joiner + asking + " " + " ".join(rest)
        parsed = await parse_reply(text, list(pending), words=answer_words(ALL))
        assert not _approves(parsed) and parsed.unrelated, (text, parsed)


@settings(max_examples=300)
@given(head=st.lists(st.sampled_from(["I", "the", "ana", "note", "coffee", "we", "my"]),
                     min_size=1, max_size=3),
       yes=st.sampled_from(sorted(ENGLISH.yes)),
       tail=st.lists(st.sampled_from(["today", "now", "then", "too", "maybe"]), max_size=2),
       pending=st.sampled_from(PENDING))
async def test_a_yes_word_that_does_not_head_its_clause_never_approves(head, yes, tail,
                                                                       pending):
    text = " ".join([*head, yes, *tail])
    parsed = await parse_reply(text, list(pending))
    assert not _approves(parsed) and parsed.unrelated, (text, parsed)


@settings(max_examples=300)
@given(text=st.text(max_size=80), pending=st.sampled_from(PENDING))
async def test_any_text_is_read_without_error_and_a_question_never_approves(text, pending):
    parsed = await parse_reply(text, list(pending), words=answer_words(ALL))
    if "?" in text or "¿" in text:
        assert not _approves(parsed) and parsed.unrelated
