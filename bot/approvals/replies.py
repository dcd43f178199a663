"""Turning a person's reply into decisions on their pending approvals.

A message is an answer only when it clearly is one: the rules (bot.approvals.rules) read it
first. A question, a yes word that does not head its clause, or a message that asks for
something else is a new request (`unrelated`): nothing is decided, and when it touched what
waits a reminder may follow the answer (`unsure`). What the rules cannot read goes to an
optional LLM interpreter (the classifier), whose answer counts only when it is valid JSON, says
the message answers the requests, and is sure; anything else (an error, a time-out, text that
is not the JSON asked for, "not sure") leaves the message `unrelated` and the approvals pending.
"Which one do you mean?" only for a message that clearly answers one of several, or a bare
"yes" that could answer another kind of prompt too (`elsewhere`: a task's question, a pairing
request), each named.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from bot.approvals.listing import pending_lines
from bot.approvals.rules import Ask, Decision, Kind, Reading, Verdict, read, which
from bot.contracts.answer_words import AnswerWords
from bot.contracts.approvals import ApprovalRequest
from persona.lines import DEFAULT, ApprovalLines, fill

__all__ = ["Decision", "Interpreter", "ParsedReply", "Verdict", "interpret_prompt",
           "parse_reply"]

log = logging.getLogger(__name__)


@dataclass
class ParsedReply:
    decisions: list[Decision] = field(default_factory=list)
    clarify: str | None = None  # ask this and decide nothing
    refused: list[str] = field(default_factory=list)  # references to unknown approvals
    unrelated: bool = False  # not an answer at all: the message goes to the normal loop
    # Unrelated, but it may have been meant for what waits (it touched it, or the
    # interpreter could not tell): the answer may be followed by a reminder of what waits.
    unsure: bool = False
    question: bool = False  # it asked something: never an answer, nor the change asked for


Interpreter = Callable[[str, list[ApprovalRequest]], Awaitable[str]]


def _ask_which(pending: list[ApprovalRequest], lines: ApprovalLines) -> str:
    return fill(lines.approval_which, listing="; ".join(pending_lines(pending, code=False)))


async def parse_reply(text: str, pending: list[ApprovalRequest], *,
                      interpret: Interpreter | None = None,
                      lines: ApprovalLines = DEFAULT, words: AnswerWords | None = None,
                      elsewhere: Callable[[], Awaitable[Sequence[str]]] | None = None
                      ) -> ParsedReply:
    """The decisions a reply makes; or a question back (`clarify`, in `lines`); or
    `unrelated`: the reply is about something else. `words`: the persona's languages'
    (bot.contracts.answer_words); `elsewhere`: other kinds of prompts waiting, each named
    with how to answer it (asked only for a bare yes)."""
    if not pending:
        return ParsedReply(unrelated=True)
    reading = read(text, pending, words)
    if reading.kind is Kind.NEW:
        return ParsedReply(unrelated=True, unsure=reading.remind, question=reading.question)
    if reading.kind is Kind.UNDECIDED:
        if interpret is None:
            return ParsedReply(unrelated=True)
        return await _interpreted(text.strip(), pending, interpret, lines)
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


class _NotRead(Exception):
    """The interpreter's answer is not the JSON asked for."""


async def _interpreted(text: str, pending: list[ApprovalRequest], interpret: Interpreter,
                       lines: ApprovalLines) -> ParsedReply:
    """Ask the interpreter (an LLM) whether the text answers the requests, and how; accept
    only a valid, sure answer. Anything else: the text is a new request (`unrelated`)."""
    not_read = ParsedReply(unrelated=True, unsure=True)
    try:
        raw = json.loads(_json_part(await interpret(text, pending)))
        answers, sure, decisions = _read(raw, pending)
    except Exception:  # the LLM is down, timed out, or answered something else: not an answer
        log.warning("could not read the interpreter's answer (LLM down, or not the JSON "
                    "asked for); the message is handled as a new request", exc_info=True)
        return not_read
    if not answers:
        return ParsedReply(unrelated=True)
    by_id = {a.id: a for a in pending}
    for decision in decisions:
        approval = by_id[decision.approval_id]
        if decision.verdict is Verdict.EDIT and not approval.allow_modification:
            return ParsedReply(clarify=fill(lines.approval_cannot_change_which,
                                            summary=approval.summary))
    if sure and decisions:
        return ParsedReply(decisions)
    if len(pending) > 1:  # an answer, but to which of them is not sure: ask
        return ParsedReply(clarify=_ask_which(pending, lines))
    return not_read


def _read(raw: object, pending: list[ApprovalRequest]
          ) -> tuple[bool, bool, list[Decision]]:
    """(answers, sure, decisions) from the interpreter's JSON; _NotRead when it is not what
    was asked for (an unknown number, a word that is no decision, one action twice)."""
    if not isinstance(raw, dict):
        raise _NotRead(f"not a JSON object: {raw!r}")
    items = raw.get("decisions") or []
    if not isinstance(items, list):
        raise _NotRead("decisions is not a list")
    decisions = []
    for item in items:
        approval = which(pending, str(int(item["number"])))
        if approval is None:
            raise _NotRead(f"no action numbered {item['number']}")
        decisions.append(Decision(approval.id, Verdict(item["decision"]),
                                  str(item.get("changes") or "")))
    if len({d.approval_id for d in decisions}) != len(decisions):
        raise _NotRead("one action decided twice")
    answers = raw.get("answers", bool(decisions))
    sure = raw.get("sure", True)
    if not isinstance(answers, bool) or not isinstance(sure, bool):
        raise _NotRead("answers and sure must be true or false")
    return answers, sure, decisions if answers else []


def _json_part(text: str) -> str:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=0)
    return text[start:].strip().removesuffix("```").strip()


INTERPRET_PROMPT = (
    "A person was asked to approve or cancel these pending actions:\n{listing}\n\n"
    "Their message: {reply}\n\n"
    "Does the message answer these requests (approve, cancel or change them), or is it "
    "something else (a new request, a question, small talk)? Answer with JSON only: "
    "{{\"answers\": true | false, \"sure\": true | false, \"decisions\": [{{\"number\": "
    "<action number>, \"decision\": \"approve\" | \"reject\" | \"edit\", \"changes\": "
    "\"<what to change, for edit>\"}}]}}. \"answers\" is false for anything that is not a "
    "reply to these requests (then \"decisions\" is []). Include only actions the message "
    "clearly decides; \"sure\" is false when you are guessing.")


def interpret_prompt(text: str, pending: list[ApprovalRequest]) -> str:
    listing = "\n".join(pending_lines(pending, code=False, details=True))
    return INTERPRET_PROMPT.format(listing=listing, reply=json.dumps(text))
