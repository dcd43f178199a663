"""Turning a person's reply into decisions on their pending approvals.

Only the closed answer grammar decides (bot.approvals.grammar): a message that is not
exactly an answer of its table is `unrelated`, a message like any other, and nothing is
decided. No classifier is asked: nothing but the table ever approves. "Which one do you
mean?" only for a message that clearly answers one of several, or a bare "yes" that could
answer another kind of prompt too (`elsewhere`: a task's question, a pairing request), each
named.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bot.approvals.grammar import Ask, Decision, Kind, Reading, Verdict, read
from bot.approvals.listing import pending_lines
from bot.contracts.answer_words import AnswerWords
from bot.contracts.approvals import ApprovalRequest
from persona.lines import DEFAULT, ApprovalLines, fill

__all__ = ["Decision", "ParsedReply", "Verdict", "parse_reply"]


@dataclass
class ParsedReply:
    decisions: list[Decision] = field(default_factory=list)
    clarify: str | None = None  # ask this and decide nothing
    refused: list[str] = field(default_factory=list)  # references to unknown approvals
    unrelated: bool = False  # not an answer at all: the message goes to the normal loop
    question: bool = False  # it asked something: never an answer, nor the change asked for


def _ask_which(pending: list[ApprovalRequest], lines: ApprovalLines) -> str:
    return fill(lines.approval_which, listing="; ".join(pending_lines(pending, code=False)))


async def parse_reply(text: str, pending: list[ApprovalRequest], *,
                      lines: ApprovalLines = DEFAULT, words: AnswerWords | None = None,
                      elsewhere: Callable[[], Awaitable[Sequence[str]]] | None = None
                      ) -> ParsedReply:
    """The decisions a reply makes; or a question back (`clarify`, in `lines`); or
    `unrelated`: the reply is not an answer of the table. `words`: the persona's languages'
    (bot.contracts.answer_words); `elsewhere`: other kinds of prompts waiting, each named
    with how to answer it (asked only for a bare yes)."""
    if not pending:
        return ParsedReply(unrelated=True)
    reading = read(text, pending, words)
    if reading.kind is Kind.NEW:
        return ParsedReply(unrelated=True, question=reading.question)
    if elsewhere is not None and reading.bare and any(d.verdict is Verdict.APPROVE
                                                      for d in reading.decisions):
        others = await elsewhere()
        if others:
            return ParsedReply(clarify=_ask_which_kind(pending, others, lines))
    return _answer(reading, pending, lines)


def _answer(reading: Reading, pending: list[ApprovalRequest],
            lines: ApprovalLines) -> ParsedReply:
    if reading.ask is Ask.WHICH:
        return ParsedReply(clarify=_ask_which(pending, lines))
    if reading.ask is Ask.YES_AND_NO:
        return ParsedReply(clarify=fill(lines.approval_yes_and_no, ref=reading.ref))
    if reading.ask is Ask.CANNOT_CHANGE:
        summary = next(a.summary for a in pending if a.id == reading.ref)
        return ParsedReply(clarify=fill(lines.approval_cannot_change_yes_no, summary=summary))
    return ParsedReply(list(reading.decisions), refused=list(reading.refused))


def _ask_which_kind(pending: list[ApprovalRequest], elsewhere: Sequence[str],
                    lines: ApprovalLines) -> str:
    """A bare yes could answer an approval or another kind of prompt: name each, with how
    to answer it."""
    named = [fill(lines.approval_which_item, summary=a.summary, code=a.code)
             for a in pending]
    return fill(lines.approval_which_kind, listing="; ".join([*named, *elsewhere]))
