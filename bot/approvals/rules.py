"""The rules that decide whether a message answers what waits for the person's OK.

Only a clear answer decides anything. A message is cut into clauses (at commas and full
stops, at "and", "but", "then"...), and each clause is read on its own:

- an answer: a yes or no word at its head ("yes", "no thanks", "ok do it", "no, not Ana"),
  a verb that names the action ("send it", "delete the note"), numbers or codes paired with
  a verdict ("1 yes 2 no", "YES 4821"); besides its head it may hold only courtesy ("please",
  "thanks"), small words ("it", "the", "to") and words of the waiting requests themselves
  ("yes, send the email");
- a change: "change the subject to Q3", or any change beside a yes or no ("send it but make
  the subject 'Q3'");
- a question: a question mark, or an interrogative at its head, also after a yes word ("is
  Ana ok", "ok what does the note say", "sure, but what time is it");
- anything else.

The message is an answer only when every clause is an answer (or a change, or courtesy). A
question, a yes word that does not head its clause ("I said no to coffee") or a clause that
asks for something else ("yes, and remind me at 5") makes the whole message a new request:
nothing is decided, and `remind` says a line about what waits may follow the answer. A
clause that touches what waits but cannot be read ("no rush", "yes I think so", "sounds
good") leaves the message UNDECIDED: the classifier (bot.approvals.replies) decides it.

The words come from bot.contracts.answer_words, per language the persona speaks. The table
of real phrasings in tests/unit/test_approval_phrasings.py is what these rules must say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from bot.approvals.reply_words import clauses, is_number, keywords
from bot.contracts.answer_words import AnswerWords, answer_words
from bot.contracts.approvals import ApprovalRequest
from bot.contracts.options import Option


class Verdict(Enum):
    """What a decision does to a request. Each Option a person picks is one verdict
    (`Verdict.of`); the values are the classifier's JSON words."""

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
    NEW = "new"  # a question or another request: nothing is decided
    UNDECIDED = "undecided"  # it touches what waits, but only the classifier can read it


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
    question: bool = False
    remind: bool = False  # NEW, but it touched what waits: a reminder may follow the answer


# --- one clause -------------------------------------------------------------------------


class Part(Enum):
    EMPTY = "empty"  # courtesy only
    ANSWER = "answer"
    CHANGE = "change"
    MAYBE_CHANGE = "maybe_change"  # a change verb pointing at nothing: see _change_kind
    UNREAD = "unread"  # touches what waits, but the rules cannot read it
    NOT_HEADED = "not_headed"  # a yes or no word that does not head its clause
    OTHER = "other"  # something else: a request, small talk


@dataclass
class Clause:
    part: Part
    verdict: Verdict | None = None
    refs: list[tuple[str, Verdict]] = field(default_factory=list)  # "1 yes", "4821 no"
    names: set[str] = field(default_factory=set)  # words of a request
    everything: bool = False


@dataclass(frozen=True)
class _Context:
    words: AnswerWords
    named: frozenset[str]  # every waiting request's keywords

    def verdict(self, token: str) -> Verdict | None:
        if token in self.words.yes:
            return Verdict.APPROVE
        if token in self.words.no:
            return Verdict.REJECT
        return None


def _head(tokens: list[str], ctx: _Context) -> list[str]:
    """The clause from its first word that is not a "well", "oh" or a courtesy word."""
    skip = ctx.words.leading | ctx.words.courtesy
    i = 0
    while i < len(tokens) and tokens[i] in skip:
        i += 1
    return tokens[i:]


def asks(clause: list[str], words: AnswerWords) -> bool:
    """The clause is a question: an interrogative at its head, also after yes, no, "well"
    ("ok what does the note say", "no wait, is it today")."""
    skip = words.leading | words.courtesy | words.yes | words.no
    rest = [t for t in clause if t not in ("!", ",")]
    i = 0
    while i < len(rest) and rest[i] in skip:
        i += 1
    if i >= len(rest):
        return False
    head = rest[i]
    if head in words.asking:
        return True
    follower = rest[i + 1] if i + 1 < len(rest) else ""
    return head in words.asking_with_person and follower in words.persons


NEGATIONS = frozenset({"don't", "dont", "do not", "not", "never", "no lo hagas", "pas",
                       "nicht"})


def read_clause(tokens: list[str], ctx: _Context) -> Clause:
    words = ctx.words
    body = [t for t in _head(tokens, ctx) if t not in words.courtesy]
    if not body:
        return Clause(Part.EMPTY)
    change = _change_kind(body, ctx)
    if change is not None:
        return Clause(change)
    if any(is_number(t) for t in body):
        return _numbered(body, ctx)
    head = body[0]
    verdict = ctx.verdict(head)
    if verdict is None and head in words.doing:
        verdict = Verdict.APPROVE
    if verdict is None:
        return _not_an_answer(body, ctx)
    clause = Clause(Part.ANSWER, verdict)
    before = head
    for token in body[1:]:
        said = ctx.verdict(token)
        if token in ctx.named:
            clause.names.add(token)
        elif token in words.everything:
            clause.everything = True
        elif said is not None and said is not verdict:
            if not (verdict is Verdict.REJECT and before in NEGATIONS):  # "don't send it"
                return Clause(Part.UNREAD)  # "yes no", "no, ok"
        elif token in words.doing and said is None:
            if verdict is Verdict.REJECT and before not in NEGATIONS:
                return Clause(Part.UNREAD)  # "no, send it": which is it?
        elif said is None and token not in words.filler:
            return Clause(Part.UNREAD)  # "no rush", "yes I think so"
        before = token
    return clause


def _change_kind(body: list[str], ctx: _Context) -> Part | None:
    """CHANGE: the clause asks to change the request: opened by a verb that only asks for
    a change ("change the subject", "make it 3pm"), a change verb that names the request
    ("add Bob to the email"), a change verb right after a yes or no ("yes make it 3pm"),
    or "instead" anywhere. MAYBE_CHANGE: a change verb that names nothing ("add Bob"):
    beside an answer it may be a change or another request ("ok, set a timer"), so the
    classifier reads it; alone it is a request ("add milk to my list")."""
    words = ctx.words
    if "instead" in body or "plutôt" in body or "stattdessen" in body:
        return Part.CHANGE
    head = body[0]
    if head in words.changing_first:
        return Part.CHANGE
    if head in words.yes | words.no and len(body) > 1 and body[1] in words.changing:
        return Part.CHANGE
    if head in words.changing:
        return Part.CHANGE if any(t in ctx.named for t in body[1:]) else Part.MAYBE_CHANGE
    return None


def _numbered(body: list[str], ctx: _Context) -> Clause:
    """"1 yes 2 no", "yes 4821", "#2: no": each number paired with the verdict beside it."""
    clause = Clause(Part.ANSWER)
    number: str | None = None
    verdict: Verdict | None = None
    for token in body:
        said = ctx.verdict(token)
        if is_number(token):
            if number is not None:
                return Clause(Part.OTHER if verdict is None else Part.UNREAD)
            number = token.removeprefix("#")
        elif said is not None:
            if verdict is not None:
                return Clause(Part.UNREAD)
            verdict = said
        elif token not in ctx.words.filler:
            touched = verdict is not None or any(ctx.verdict(t) for t in body)
            return Clause(Part.UNREAD if touched else Part.OTHER)
        if number is not None and verdict is not None:
            clause.refs.append((number, verdict))
            number, verdict = None, None
    if number is not None or verdict is not None or not clause.refs:
        return Clause(Part.UNREAD if any(ctx.verdict(t) for t in body) else Part.OTHER)
    return clause


def _not_an_answer(body: list[str], ctx: _Context) -> Clause:
    words = ctx.words
    if any(ctx.verdict(t) is not None for t in body[1:]):
        return Clause(Part.NOT_HEADED)  # "I said no to coffee", "Ana ok"
    if any(t in ctx.named or t in words.doing or t in words.changing or t in words.soft
           for t in body):
        return Clause(Part.UNREAD)  # "the email is fine I guess", "sounds good"
    return Clause(Part.OTHER)


# --- the message ------------------------------------------------------------------------


def read(text: str, pending: Sequence[ApprovalRequest],
         words: AnswerWords | None = None) -> Reading:
    """What the rules make of `text` with `pending` waiting (at least one)."""
    words = words or answer_words()
    named = frozenset(set().union(*(keywords(a) for a in pending)))
    ctx = _Context(words, named)
    parts = clauses(text, words)
    touched = _touches(parts, ctx, len(pending))
    if "?" in text or "¿" in text or any(asks(c, words) for c in parts):
        return Reading(Kind.NEW, question=True, remind=touched)
    read_parts = [read_clause(c, ctx) for c in parts]
    kinds = {c.part for c in read_parts}
    if Part.MAYBE_CHANGE in kinds:  # beside an answer, a change or another request: the
        kinds.discard(Part.MAYBE_CHANGE)  # classifier reads it; alone, a request
        kinds.add(Part.UNREAD if kinds & {Part.ANSWER, Part.CHANGE} else Part.OTHER)
    if Part.NOT_HEADED in kinds or (Part.OTHER in kinds and kinds & {Part.ANSWER,
                                                                    Part.CHANGE}):
        return Reading(Kind.NEW, remind=True)
    if Part.UNREAD in kinds:
        return Reading(Kind.UNDECIDED)
    if not kinds & {Part.ANSWER, Part.CHANGE}:
        return Reading(Kind.NEW, remind=touched)
    if Part.CHANGE in kinds:
        return _change(text, pending)
    return _decide([c for c in read_parts if c.part is Part.ANSWER], pending)


def _touches(parts: list[list[str]], ctx: _Context, waiting: int) -> bool:
    """The message uses a word that could be about what waits (a yes, a verb of the action,
    a word of a request, a number of one)."""
    for token in (t for c in parts for t in c):
        if ctx.verdict(token) is not None or token in ctx.named or token in ctx.words.doing:
            return True
        if is_number(token) and (len(token.removeprefix("#")) == 4
                                 or 0 < int(token.removeprefix("#")) <= waiting):
            return True
    return False


def _change(text: str, pending: Sequence[ApprovalRequest]) -> Reading:
    if len(pending) != 1:
        return Reading(Kind.UNDECIDED)  # which one is changed: the classifier reads it
    [approval] = pending
    if not approval.allow_modification:
        return Reading(Kind.ANSWER, ask=Ask.CANNOT_CHANGE, ref=approval.id)
    return Reading(Kind.ANSWER, (Decision(approval.id, Verdict.EDIT, text.strip()),))


def which(pending: Sequence[ApprovalRequest], ref: str) -> ApprovalRequest | None:
    """A position (1, 2...) or a code (4821)."""
    if len(ref) == 4:
        return next((a for a in pending if a.code == ref), None)
    index = int(ref) - 1
    return pending[index] if 0 <= index < len(pending) else None


def _decide(answers: list[Clause], pending: Sequence[ApprovalRequest]) -> Reading:
    decided: dict[str, Verdict] = {}
    refused: list[str] = []
    bare = True
    for clause in answers:
        targets: list[tuple[ApprovalRequest, Verdict, str]] = []
        for ref, verdict in clause.refs:
            found = which(pending, ref)
            if found is None:
                refused.append(ref)
            else:
                targets.append((found, verdict, ref))
        assert clause.verdict is not None or clause.refs
        if clause.verdict is not None:
            chosen = _chosen(clause, pending)
            if chosen is None:
                return Reading(Kind.ANSWER, ask=Ask.WHICH, bare=bare and not clause.names)
            targets += [(a, clause.verdict, a.code) for a in chosen]
        bare = bare and not (clause.refs or clause.names or clause.everything)
        for approval, verdict, ref in targets:
            if decided.get(approval.id, verdict) is not verdict:
                return Reading(Kind.ANSWER, ask=Ask.YES_AND_NO, ref=ref)
            decided[approval.id] = verdict
    decisions = tuple(Decision(aid, v) for aid, v in decided.items())
    return Reading(Kind.ANSWER, decisions, tuple(refused), bare=bare and bool(decisions))


def _chosen(clause: Clause, pending: Sequence[ApprovalRequest]
            ) -> list[ApprovalRequest] | None:
    """The requests a clause's verdict is about; None when that is not clear."""
    if clause.names:
        matches = [a for a in pending if keywords(a) & clause.names]
        return matches if len(matches) == 1 else None
    if clause.everything:
        return list(pending)
    if clause.refs:
        return []  # "yes 1": the number says which
    return list(pending) if len(pending) == 1 else None
