"""The capability router: before a turn's first LLM request, the capabilities the person's own
words plainly name are opened, with no LLM call, so "what's the weather in Lyon" reaches the
weather tool in the first request instead of after an `open_capability` round trip.

Each capability declares its words in the registry (`keywords:`; a `parts:` entry's words
open only that part's tools). A keyword is a phrase matched on whole words, case and
apostrophes ignored ("what's" is "whats"); in a phrase, `#` stands for a number (digits or
a number word: "six times seven" matches "# times #") and a word ending in `*` for any word
it begins ("remind*": remind, reminder, reminders).

    the message     its words name one or more capabilities: those are opened
    the last turn   it names none (a follow-up: "that I'm late", "yes"): the previous
                    person's message and the reply to it are read the same way
    unsure          more than `max_open` capabilities named: nothing is opened, and the
                    model opens what it needs with `open_capability`, as without a router

A wrong guess costs tokens, never an answer: an opened capability the model does not use is
a few hundred tokens; one it needed and the router did not open is the round trip it always
was (counted as a miss in /metrics, and shown in /debug).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.tools.capabilities import OPEN_TOOL, CapabilitySpec, ToolExposure, call_argument
from bot.tools.offer import StableOffers

Message = dict[str, Any]

NUMBER = "#"
# Words that are numbers, so "six times seven" is arithmetic as "6 times 7" is.
NUMBER_WORDS = frozenset("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
hundred thousand million billion half dozen
""".split())
MAX_OPEN = 3  # more capabilities named than this: the message is a plan, not one request
# Only the start of a long message is read: what it asks for is said early, and the work
# stays bounded whatever is pasted.
MAX_WORDS = 200

# Letters (any script) apart from digits, so "6x7" is 6, x, 7 and "3pm" is 3, pm; numbers
# with their decimals; the arithmetic signs a person types.
_TOKEN = re.compile(r"[^\W\d_]+|\d+(?:[.,]\d+)?|[+*×÷=%^]")
_APOSTROPHES = str.maketrans("", "", "'’`")


def words(text: str, limit: int = MAX_WORDS) -> list[str]:
    """The message's words as the router compares them."""
    found = []
    for match in _TOKEN.finditer(text.lower().translate(_APOSTROPHES)):
        found.append(match.group())
        if len(found) >= limit:
            break
    return found


def _is_number(word: str) -> bool:
    return word[0].isdigit() or word in NUMBER_WORDS


@dataclass(frozen=True)
class _Phrase:
    """A keyword as a sequence of word patterns, and what it opens."""

    keyword: str
    pattern: tuple[str, ...]
    capability: str
    tools: frozenset[str] | None  # a part's tools; None: the whole capability

    def matches_at(self, said: Sequence[str], i: int, start: int = 0) -> bool:
        """Whether the phrase is at `said[i]` (its first `start` words known to match)."""
        if i + len(self.pattern) > len(said):
            return False
        for want, word in zip(self.pattern[start:], said[i + start:i + len(self.pattern)],
                              strict=True):
            if want == NUMBER:
                if not _is_number(word):
                    return False
            elif want.endswith("*") and len(want) > 1:
                if not word.startswith(want[:-1]):
                    return False
            elif want != word:
                return False
        return True


def phrase_pattern(keyword: str) -> tuple[str, ...]:
    """A keyword's word patterns (empty: it has no words the router can match)."""
    parts = []
    for raw in keyword.lower().translate(_APOSTROPHES).split():
        if raw in (NUMBER, "*"):
            parts.append(NUMBER if raw == NUMBER else raw)
            continue
        star = raw.endswith("*")
        found = words(raw.rstrip("*"))
        if star and found:
            found[-1] += "*"
        parts.extend(found)
    return tuple(parts)


@dataclass(frozen=True)
class Route:
    """What the router opened for one turn, and why (the trace shows it)."""

    groups: frozenset[str] = frozenset()  # capabilities opened whole
    tools: frozenset[str] = frozenset()  # tools of the parts opened (beyond whole groups)
    named: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # capability -> words
    read: str = ""  # "message" or "last turn": where the words were found
    unsure: tuple[str, ...] = ()  # named, but too many to open: nothing was opened

    @property
    def opened(self) -> tuple[str, ...]:
        return tuple(self.named) if not self.unsure else ()

    def entry(self) -> dict[str, Any]:
        """The trace entry (bot.loop.traces) of this route."""
        return {"kind": "route", "opened": {c: list(w) for c, w in self.named.items()}
                if not self.unsure else {}, "read": self.read, "unsure": list(self.unsure),
                "tools": sorted(self.tools)}


NOTHING = Route()


class CapabilityRouter:
    """Built once from the capabilities that are on; `route` is pure (no state between turns),
    so every person's turns may use it at once."""

    def __init__(self, specs: Mapping[str, CapabilitySpec], max_open: int = MAX_OPEN) -> None:
        self.max_open = max_open
        # Phrases by what their first word must be: the word itself; a number (then by their
        # second word); the first two letters of a `word*` (shorter ones: tried everywhere).
        self._by_first: dict[str, list[_Phrase]] = {}
        self._numeric: dict[str, list[_Phrase]] = {}
        self._by_prefix: dict[str, list[_Phrase]] = {}
        self._anywhere: list[_Phrase] = []
        for spec in specs.values():
            self._add(spec.name, spec.keywords, None)
            for part in spec.parts:
                self._add(spec.name, part.keywords, frozenset(part.tools))

    def _add(self, capability: str, keywords: Iterable[str], tools: frozenset[str] | None
             ) -> None:
        for keyword in keywords:
            pattern = phrase_pattern(keyword)
            if not pattern:
                continue
            phrase = _Phrase(keyword, pattern, capability, tools)
            first = pattern[0]
            if first == NUMBER:
                second = pattern[1] if len(pattern) > 1 and pattern[1] != NUMBER \
                    and not pattern[1].endswith("*") else ""
                self._numeric.setdefault(second, []).append(phrase)
            elif first.endswith("*") and len(first) > 2:
                self._by_prefix.setdefault(first[:2], []).append(phrase)
            elif first.endswith("*") and len(first) > 1:
                self._anywhere.append(phrase)
            else:
                self._by_first.setdefault(first, []).append(phrase)

    def named_in(self, text: str) -> list[_Phrase]:
        """Every keyword the text contains, in the order they occur."""
        said = words(text)
        found: list[_Phrase] = []
        for i, word in enumerate(said):
            for phrase in self._by_first.get(word, ()):  # its first word is this one
                if len(phrase.pattern) == 1 or phrase.matches_at(said, i, 1):
                    found.append(phrase)
            numeric = _is_number(word)
            after = said[i + 1] if numeric and i + 1 < len(said) else ""
            for group in (self._by_prefix.get(word[:2]), self._anywhere,
                          self._numeric.get(after) if numeric else None,
                          self._numeric.get("") if numeric else None):
                for phrase in group or ():
                    if phrase.matches_at(said, i):
                        found.append(phrase)
        return found

    def route(self, text: str, history: Sequence[Message] = ()) -> Route:
        """The capabilities `text` names; when it names none, those the last turn named."""
        found, read = self.named_in(text), "message"
        if not found:
            found, read = self.named_in(last_turn_text(history)), "last turn"
        if not found:
            return NOTHING
        named: dict[str, list[str]] = {}
        whole: set[str] = set()
        tools: set[str] = set()
        for phrase in found:
            said = named.setdefault(phrase.capability, [])
            if phrase.keyword not in said:
                said.append(phrase.keyword)
            if phrase.tools is None:
                whole.add(phrase.capability)
            else:
                tools.update(phrase.tools)
        frozen = {c: tuple(w) for c, w in named.items()}
        if len(named) > self.max_open:
            return Route(named=frozen, read=read, unsure=tuple(named))
        return Route(frozenset(whole), frozenset(tools), frozen, read)


def last_turn_text(history: Sequence[Message]) -> str:
    """The person's previous message and the reply to it (text only, tool calls left out)."""
    said: list[str] = []
    for msg in reversed(history):
        content = msg.get("content")
        role = msg.get("role")
        if role == "assistant" and isinstance(content, str) and not said:
            said.append(content)
        elif role == "user":
            if isinstance(content, str):
                said.append(content)
            break
    return "\n".join(reversed(said))


@dataclass
class RoutedTools:
    """The turn's tool choice (bot.loop.state.ToolChoice): the exposure, with what the router
    opened for this turn besides, and the core's tools for triggered runs only in those. One
    per turn, never shared: it notes which capabilities
    the model reached for that were not in front of it (the router's misses)."""

    exposure: ToolExposure
    route: Route = NOTHING
    triggered: bool = False  # a triggered run: the tools only such a run needs are offered
    refused: set[str] = field(default_factory=set)
    # The conversation's tools so far, offered again (bot.tools.offer): (offers, the
    # conversation, its epoch). None: each request offers only what is open.
    kept: tuple[StableOffers, str, str] | None = None

    async def schemas(self, messages: list[Message]) -> list[dict[str, Any]]:
        wanted = await self.exposure.schemas(messages, self.route.groups, self.route.tools,
                                             triggered=self.triggered)
        if self.kept is None:
            return wanted
        offers, conversation, epoch = self.kept
        return offers.offer(conversation, epoch, wanted)

    def kept_schemas(self) -> list[dict[str, Any]] | None:
        """The conversation's tools so far (None: none yet), for a turn that needs none (a
        greeting): offered all the same, the server's cached prompt stays valid."""
        return (self.kept[0].current(*self.kept[1:]) or None) if self.kept else None

    def _kept_names(self) -> frozenset[str]:
        return self.kept[0].offered(*self.kept[1:]) if self.kept else frozenset()

    def offers_untrusted(self, messages: list[Message]) -> bool:
        kept = {g for name in self._kept_names()
                if (g := self.exposure.group_of(name)) is not None}
        return self.exposure.offers_untrusted(messages, self.route.groups | kept)

    def refusal(self, tool_name: str, messages: list[Message]) -> str | None:
        if tool_name in self._kept_names() and self.exposure.group_of(tool_name) in \
                self.exposure.on:
            return None  # offered in this conversation: it may run
        why = self.exposure.refusal(tool_name, messages, self.route.groups, self.route.tools)
        group = self.exposure.group_of(tool_name)
        if why is not None and group is not None and group in self.exposure.on:
            self.refused.add(group)
        return why

    def misses(self, history: list[Message], new_messages: Iterable[Message]) -> list[str]:
        """The capabilities the model had to open itself in this turn (`open_capability`, or
        a call to a tool that was not offered) that were not open already: neither whole by
        the router nor by the turns before (`history`)."""
        missed = set(self.refused)
        for msg in new_messages:
            for call in msg.get("tool_calls") or ():
                fn = call.get("function") or {}
                if fn.get("name") == OPEN_TOOL:
                    missed.add(call_argument(fn.get("arguments"), "name"))
        if not missed:  # (most turns: the history is not read again)
            return []
        already = self.route.groups | self.exposure.open_in(history)
        return sorted(c for c in missed - already if c in self.exposure.on)


def settle(choice: RoutedTools, history: list[Message], new_messages: Iterable[Message],
           trace: list[dict[str, Any]]) -> list[str]:
    """After the turn's loop: the route first in its trace (when it opened something or was
    unsure), what it missed last; returns the misses."""
    missed = choice.misses(history, new_messages)
    route = choice.route
    if route.named:
        trace.insert(0, route.entry())
    if missed:
        trace.append({"kind": "route_miss", "capabilities": missed})
    return missed
