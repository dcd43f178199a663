"""Turning a person's reply into decisions on their pending approvals.

A message is an answer only when it clearly is one. Clear: "yes" / "no" (with "please",
"thanks") when one approval waits; numbers or codes when several do ("1 yes 2 no", "YES 4821",
"4821 no", "yes to all"); free text that names the actions ("approve the email, cancel the
flight"); an approval with changes ("send it but make the subject 'Q3'"). Partial answers are
fine; a reference to an approval that does not exist is refused. What the rules cannot read
goes to an optional LLM interpreter, whose answer counts only when it is valid JSON, says the
message answers the requests, and is sure; anything else (an error, a time-out, text that is
not the JSON asked for, "not sure") leaves the message `unrelated`: it is a new request for
the loop, and the approvals stay pending (`unsure` says a reminder may follow the answer).
"Which one do you mean?" only for a message that clearly answers one of several.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum

from bot.approvals.listing import pending_lines
from bot.contracts.approvals import ApprovalRequest
from bot.contracts.options import APPROVE_WORDS, CANCEL_WORDS, Option
from persona.lines import DEFAULT, ApprovalLines, fill

log = logging.getLogger(__name__)


class Verdict(Enum):
    """What a decision does to a request. Each Option a person picks is one verdict
    (`Verdict.of`); the values are the interpreter's JSON words."""

    APPROVE = "approve"
    REJECT = "reject"
    EDIT = "edit"

    @classmethod
    def of(cls, option: Option) -> Verdict:
        return {Option.APPROVE: cls.APPROVE, Option.CANCEL: cls.REJECT,
                Option.EDIT: cls.EDIT}[option]


@dataclass(frozen=True)
class Decision:
    approval_id: str
    verdict: Verdict
    changes: str = ""  # for EDIT: what to change, in the person's words


@dataclass
class ParsedReply:
    decisions: list[Decision] = field(default_factory=list)
    clarify: str | None = None  # ask this and decide nothing
    refused: list[str] = field(default_factory=list)  # references to unknown approvals
    unrelated: bool = False  # not an answer at all: the message goes to the normal loop
    # Unrelated because the interpreter could not tell (failed, unsure): the answer may be
    # followed by a reminder of what waits.
    unsure: bool = False


# The yes and no words are the options' own (bot.contracts.options): one table for every
# channel.
_WORDS = "|".join(re.escape(w) for w in sorted(APPROVE_WORDS + CANCEL_WORDS, key=len,
                                                reverse=True))
# A whole word (or emoji): "y" must not match inside "yesterday".
_VERDICT = rf"(?<!\w)(?:{_WORDS})(?!\w)"
_PAIR = re.compile(rf"(?:(?<!\w)#?(\d{{1,4}})\s*[:.)=-]?\s*({_VERDICT})"
                   rf"|({_VERDICT})\s*[:=-]?\s*#?(\d{{1,4}})(?!\w))", re.IGNORECASE)
# Verbs that approve only when the clause also names the action ("send the email").
_ACTION_YES = re.compile(r"(?<!\w)(send|book|proceed with|go with|keep|do)(?!\w)", re.IGNORECASE)
_ALL = re.compile(r"\b(all|everything|both|each)\b", re.IGNORECASE)
_EDIT = re.compile(r"\b(change|make|instead|edit|modify|set|rename|replace|use|add|remove)\b",
                   re.IGNORECASE)
# Without a yes/no word, only a message that starts by asking for a change is an edit: "what's
# the weather like?" while an approval waits must reach the normal loop.
_EDIT_FIRST = re.compile(r"^\s*(change|edit|modify|rename|replace|make it|make the|set the)\b",
                         re.IGNORECASE)
# A reply made only of yes (or no) words and courtesy: "yes", "yes please, go ahead", "ok do
# it, thanks", "no thanks".
_COURTESY = r"(?<!\w)(?:please|pls|thanks|thank you|thx)(?!\w)"
_ONLY_VERDICT = re.compile(
    rf"^[\s,!.]*(?:(?:{_VERDICT}|{_COURTESY})[\s,!.]*)+$", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9@.]+")
_STOP = {"the", "a", "an", "to", "it", "that", "this", "one", "please", "and", "my", "for",
         "of", "on", "in", "send", "book", "do", "go", "ahead"}

Interpreter = Callable[[str, list[ApprovalRequest]], Awaitable[str]]


def _verdict(word: str) -> Verdict:
    """A yes or no word (one the patterns matched) as its verdict."""
    return Verdict.APPROVE if Option.parse(word) is Option.APPROVE else Verdict.REJECT


def _which(pending: list[ApprovalRequest], ref: str) -> ApprovalRequest | None:
    """A position (1, 2...) or a code (4821)."""
    if len(ref) == 4:
        return next((a for a in pending if a.code == ref), None)
    index = int(ref) - 1
    return pending[index] if 0 <= index < len(pending) else None


def _ask_which(pending: list[ApprovalRequest], lines: ApprovalLines) -> str:
    return fill(lines.approval_which, listing="; ".join(pending_lines(pending, code=False)))


async def parse_reply(text: str, pending: list[ApprovalRequest], *,
                      interpret: Interpreter | None = None,
                      lines: ApprovalLines = DEFAULT) -> ParsedReply:
    """The decisions a reply makes; or a question back (`clarify`, in `lines`); or
    `unrelated`: the reply is about something else."""
    if not pending:
        return ParsedReply(unrelated=True)
    stripped = text.strip()
    # 1. "yes" / "no" alone (with courtesy words).
    said = {_verdict(w) for w in re.findall(_VERDICT, stripped, re.IGNORECASE)}
    if _ONLY_VERDICT.match(stripped) and len(said) == 1:
        verdict = said.pop()
        if len(pending) == 1:
            return ParsedReply([Decision(pending[0].id, verdict)])
        return ParsedReply(clarify=_ask_which(pending, lines))
    # 2. "yes to all" / "cancel all".
    words = {w.lower() for w in re.findall(_VERDICT, stripped, re.IGNORECASE)}
    if _ALL.search(stripped) and words and not _PAIR.search(stripped):
        verdicts = {_verdict(w) for w in words}
        if len(verdicts) == 1 and not _EDIT.search(stripped):
            verdict = verdicts.pop()
            return ParsedReply([Decision(a.id, verdict) for a in pending])
    # 3. "1 yes 2 no", "YES 4821".
    pairs = _PAIR.findall(stripped)
    if pairs and not _EDIT.search(stripped):
        return _from_pairs(pairs, pending, lines)
    # 4. One approval, with changes: "send it but make the subject 'Q3'".
    if len(pending) == 1 and ((words and _EDIT.search(stripped)) or _EDIT_FIRST.match(stripped)):
        if not pending[0].allow_modification:
            return ParsedReply(clarify=fill(lines.approval_cannot_change_yes_no,
                                            summary=pending[0].summary))
        return ParsedReply([Decision(pending[0].id, Verdict.EDIT, stripped)])
    # 5. Free text naming the actions: "approve the email, cancel the flight".
    if not words and not _ACTION_YES.search(stripped):
        return ParsedReply(unrelated=True)
    named = _by_name(stripped, pending)
    if named is not None:
        return named
    # A yes/no word or an action verb in a sentence the rules cannot read ("no rush", "book
    # lunch with Ana"): only the interpreter, sure of it, makes it an answer.
    if interpret is None:
        return ParsedReply(unrelated=True)
    return await _interpreted(stripped, pending, interpret, lines)


def _from_pairs(pairs: list[tuple[str, str, str, str]], pending: list[ApprovalRequest],
                lines: ApprovalLines) -> ParsedReply:
    reply = ParsedReply()
    seen: dict[str, Verdict] = {}
    for ref_a, word_a, word_b, ref_b in pairs:
        ref, word = (ref_a, word_a) if ref_a else (ref_b, word_b)
        approval = _which(pending, ref)
        if approval is None:
            reply.refused.append(ref)
            continue
        verdict = _verdict(word)
        if seen.get(approval.id, verdict) is not verdict:
            return ParsedReply(clarify=fill(lines.approval_yes_and_no, ref=ref))
        seen[approval.id] = verdict
    reply.decisions = [Decision(aid, v) for aid, v in seen.items()]
    return reply


def _keywords(approval: ApprovalRequest) -> set[str]:
    text = f"{approval.summary} {approval.tool_name.replace('_', ' ')}".lower()
    return {w for w in _WORD.findall(text) if w not in _STOP and len(w) > 2}


def _by_name(text: str, pending: list[ApprovalRequest]) -> ParsedReply | None:
    """Each clause has one verdict and names exactly one approval; else None."""
    clauses = [c for c in re.split(r"[,;]|\band\b|\bbut\b|\bthen\b", text, flags=re.IGNORECASE)
               if c.strip()]
    decisions: dict[str, Verdict] = {}
    for clause in clauses:
        verdicts = re.findall(_VERDICT, clause, re.IGNORECASE)
        kinds = {_verdict(v) for v in verdicts}
        if not kinds and _ACTION_YES.search(clause):
            kinds = {Verdict.APPROVE}
        if not kinds:
            continue
        clause_words = {w for w in _WORD.findall(clause.lower()) if w not in _STOP}
        matches = [a for a in pending if _keywords(a) & clause_words]
        if len(matches) != 1 or len(kinds) != 1:
            return None
        decisions[matches[0].id] = kinds.pop()
    if not decisions:
        return None
    return ParsedReply([Decision(aid, v) for aid, v in decisions.items()])


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
        approval = _which(pending, str(int(item["number"])))
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
