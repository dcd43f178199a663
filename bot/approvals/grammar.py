"""The closed answer grammar: the only text that decides what waits for the person's OK.

The whole message is read, never a part of it. Its case, the punctuation around its words
(. , ! ; : … - and a "#" before a number), the emoji that say nothing (skin tones, variation
selectors) and the courtesy words of the table ("please", "thanks", "gracias") are set
aside; what is left must be exactly one of these forms, built only from words of the table
(bot.contracts.answer_words) and numbers:

    yes | no                 one or more yes words, or one or more no words ("yes",
                             "ok", "go ahead", "no", "cancel", "sí", "oui", "ja")
    VERDICT EVERYTHING       every waiting card ("yes to all", "cancel both")
    CODE                     the card's 4-digit code alone: yes to that card
    VERDICT CODE, CODE VERDICT, N VERDICT
                             one card by its code ("yes 4821", "4821 no") or its position
                             ("1 yes"); several pairs in one message are the batch form
                             ("1 yes 2 no", "7310 yes 1942 no")
    change … | edit …        the edit form: never a verdict, it makes a new card bound to
                             the changed arguments (for the one editable card waiting, or
                             the card named right after: "change 2 the subject to Q3")

Anything else is not an answer, whatever it holds: a verb ("send it", "delete the note"), a
question mark, a quote, sarcasm ("yeah right"), a word that is not in the table, a longer
sentence, "yes 1" (a verdict then a position: "yes to 1" or "yes, and 1 more thing"? It
decides nothing; the position comes first, "1 yes", or the code). Such a message is a
message like any other: the loop answers it and a line says what still waits
(bot.approvals.decide). The digit a channel binds to its prompt (an SMS "1") never reaches
this grammar: it arrives as a button (bot.gateway).

No verb list and no classifier decide here: the table is closed, and the reading is pure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from bot.contracts.answer_words import AnswerWords, answer_words
from bot.contracts.approvals import ApprovalRequest
from bot.contracts.options import Option


class Verdict(Enum):
    """What a decision does to a request. Each Option a person picks is one verdict
    (`Verdict.of`)."""

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


class Kind(Enum):
    ANSWER = "answer"  # decisions, or a question back (`ask`)
    NEW = "new"  # not an answer of the table: nothing is decided


class Ask(Enum):
    """What to ask back instead of deciding."""

    WHICH = "which"  # a clear answer to one of several: which one?
    YES_AND_NO = "yes_and_no"  # one request both approved and refused (`ref`)
    CANNOT_CHANGE = "cannot_change"  # a change to a request that takes none (`ref`: its id)


@dataclass(frozen=True)
class Reading:
    kind: Kind
    decisions: tuple[Decision, ...] = ()
    refused: tuple[str, ...] = ()  # numbers and codes of nothing waiting
    ask: Ask | None = None
    ref: str = ""  # what `ask` is about
    # A yes or no with nothing saying which request: with other kinds of prompts waiting
    # (a task's question, a pairing request), "yes" could mean any of them.
    bare: bool = False
    question: bool = False  # it holds a question mark: never an answer, nor a change


# --- the text, set aside what says nothing ----------------------------------------------

_QUOTES = str.maketrans({"’": "'", "‘": "'"})
_SAYS_NOTHING = re.compile("[\U0001F3FB-\U0001F3FF\uFE0E\uFE0F\u200D]")  # tones, selectors
_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")  # "vas-y": two words
_TOKEN = re.compile(r"[\w']+|\S")
# Punctuation around words, set aside. Anything else that is not a word ("?", a quotation
# mark, a bracket, "*", an emoji not in the table) makes the message no answer.
_AROUND = frozenset(".,!;:…-–—#")
_QUESTION = frozenset("?¿")


def _units(text: str) -> list[str] | None:
    """Lower-case words and symbols, punctuation around words set aside; None when the text
    holds a character no answer has (a question mark, a quote, a bracket...)."""
    normal = unicodedata.normalize("NFKC", _SAYS_NOTHING.sub("", text.translate(_QUOTES)))
    found: list[str] = []
    for token in _TOKEN.findall(_HYPHEN.sub(" ", normal).lower()):
        if token in _AROUND:
            continue
        if token.startswith("'") or (token.endswith("'") and not token.endswith("n't")):
            return None  # 'yes': a quote
        found.append(token)
    return found


def _phrases(units: list[str], words: AnswerWords) -> list[str] | None:
    """The units grouped into the table's phrases ("go ahead", "thank you"), courtesy set
    aside; numbers stay as they are. None when no grouping puts every unit in a phrase
    (the longest phrase is tried first, then shorter ones: "please do it" is "please" and
    "do it" once "please do" leaves "it" alone)."""
    table = words.phrases
    longest = max((p.count(" ") + 1 for p in table), default=1)

    def grouped(i: int) -> list[str] | None:
        if i == len(units):
            return []
        if _number(units[i]):
            rest = grouped(i + 1)
            return None if rest is None else [units[i], *rest]
        for size in range(min(longest, len(units) - i), 0, -1):
            candidate = " ".join(units[i:i + size])
            if candidate in table:
                rest = grouped(i + size)
                if rest is not None:
                    kept = candidate not in words.courtesy or candidate in words.yes | words.no
                    return [candidate, *rest] if kept else rest
        return None

    return grouped(0) if len(units) <= _LONGEST_ANSWER else None


# A message longer than this many words is no answer (and the grouping stays cheap).
_LONGEST_ANSWER = 24


# --- the forms -----------------------------------------------------------------------------

def read(text: str, pending: Sequence[ApprovalRequest],
         words: AnswerWords | None = None) -> Reading:
    """What `text` decides with `pending` waiting (at least one)."""
    words = words or answer_words()
    if any(c in _QUESTION for c in text):
        return Reading(Kind.NEW, question=True)
    edit = _edit(text, pending, words)
    if edit is not None:
        return edit
    units = _units(text)
    phrases = _phrases(units, words) if units is not None else None
    if not phrases:
        return Reading(Kind.NEW)
    verdicts = [_verdict(p, words) for p in phrases]
    if all(v is Verdict.APPROVE for v in verdicts) or all(v is Verdict.REJECT for v in verdicts):
        return _to_all_or_one(verdicts[0], pending, bare=True)
    if phrases[-1] in words.everything and len(phrases) > 1:
        head = {_verdict(p, words) for p in phrases[:-1]}
        if len(head) == 1 and None not in head:
            return _to_all_or_one(head.pop(), pending, every=True)
        return Reading(Kind.NEW)
    if len(phrases) == 1 and len(phrases[0]) == 4 and _number(phrases[0]):
        found = which(pending, phrases[0])  # the card's code alone: yes to it
        return _decide([(phrases[0], Verdict.APPROVE)], pending) if found else Reading(Kind.NEW)
    pairs = _pairs(phrases, words)
    return _decide(pairs, pending) if pairs else Reading(Kind.NEW)


def _verdict(phrase: str, words: AnswerWords) -> Verdict | None:
    if phrase in words.yes:
        return Verdict.APPROVE
    if phrase in words.no:
        return Verdict.REJECT
    return None


def _pairs(phrases: list[str], words: AnswerWords) -> list[tuple[str, Verdict]] | None:
    """The batch form, read left to right: "N VERDICT", "CODE VERDICT" or "VERDICT CODE"
    pairs and nothing else. A verdict then a position ("yes 1") is no pair."""
    pairs: list[tuple[str, Verdict]] = []
    i = 0
    while i + 1 < len(phrases):
        first, second = phrases[i], phrases[i + 1]
        said = _verdict(second, words)
        if _number(first) and said is not None and _ref(first):
            pairs.append((first, said))
        elif (said := _verdict(first, words)) is not None and _number(second) \
                and len(second) == 4:
            pairs.append((second, said))
        else:
            return None
        i += 2
    return pairs if i == len(phrases) else None


def _number(unit: str) -> bool:
    """A number as a person types it: ASCII digits only (a "१" or a "٢" is no number here)."""
    return unit.isascii() and unit.isdigit()


def _ref(number: str) -> bool:
    """A position as a person types it (1 to 99), or a 4-digit code."""
    return len(number) <= 2 or len(number) == 4


def which(pending: Sequence[ApprovalRequest], ref: str) -> ApprovalRequest | None:
    """A position (1, 2...) or a code (4821)."""
    if len(ref) == 4:
        return next((a for a in pending if a.code == ref), None)
    index = int(ref) - 1
    return pending[index] if 0 <= index < len(pending) else None


def _to_all_or_one(verdict: Verdict | None, pending: Sequence[ApprovalRequest], *,
                   bare: bool = False, every: bool = False) -> Reading:
    assert verdict is not None
    if not every and len(pending) != 1:
        return Reading(Kind.ANSWER, ask=Ask.WHICH, bare=bare)
    return Reading(Kind.ANSWER, tuple(Decision(a.id, verdict) for a in pending), bare=bare)


def _decide(pairs: list[tuple[str, Verdict]], pending: Sequence[ApprovalRequest]) -> Reading:
    decided: dict[str, Verdict] = {}
    refused: list[str] = []
    for ref, verdict in pairs:
        found = which(pending, ref)
        if found is None:
            refused.append(ref)
            continue
        if decided.get(found.id, verdict) is not verdict:
            return Reading(Kind.ANSWER, ask=Ask.YES_AND_NO, ref=ref)
        decided[found.id] = verdict
    return Reading(Kind.ANSWER, tuple(Decision(aid, v) for aid, v in decided.items()),
                   tuple(refused))


_EDIT_REF = re.compile(r"#?([0-9]{1,2}|[0-9]{4})\b[:.,]?\s*")


def _edit(text: str, pending: Sequence[ApprovalRequest], words: AnswerWords) -> Reading | None:
    """The edit form: an edit word of the table opens the message and something follows
    ("change the subject to Q3"; "change 2 the subject to Q3" names the card by its position
    or code). None when the message is not in that form."""
    stripped = unicodedata.normalize("NFKC", text.translate(_QUOTES)).strip()
    head, _, rest = stripped.partition(" ")
    if head.lower().rstrip(":,") not in words.edit or not rest.strip():
        return None
    ref = _EDIT_REF.match(rest.strip())
    named = which(pending, ref.group(1)) if ref is not None else None
    if named is not None:
        approval = named
    elif len(pending) == 1:
        approval = pending[0]  # a number that names no card is part of the change ("10 min")
    else:
        return Reading(Kind.ANSWER, ask=Ask.WHICH)
    if not approval.allow_modification:
        return Reading(Kind.ANSWER, ask=Ask.CANNOT_CHANGE, ref=approval.id)
    return Reading(Kind.ANSWER, (Decision(approval.id, Verdict.EDIT, stripped),))
