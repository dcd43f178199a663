"""The one place a server's answer is read into an `LLMResponse`: structured tool calls as
sent (arguments as a string or an object); otherwise calls written into the text
(bot.llm.dialects); thinking that opens the text taken out (bot.llm.reasoning); template
debris taken out (bot.llm.template). What is left as `content` is only words for a person, or
None.

Calls are read from the text only from the model's own voice (docs/security.md, "Calls
written as text"):
- where the endpoint writes calls as text (`ReadingRules.text_calls`: `llm.tool_calls: text`,
  or `auto` until the endpoint has sent a structured call);
- where the answer is the call (bot.llm.markup.is_the_answer), not prose around a quoted
  one;
- never when the same markup stands in the turn's third-party text (`echoes`): that is the
  model quoting a page, a mail or a tool result. It is taken out of what is shown, logged.

Markup read as a call is a call whatever the name, and whether or not tools were offered: the
loop closes such calls unrun, as it does structured ones, so the markup never reaches a
person. Bare JSON is a call only when tools were offered and it names one of them."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from bot.llm.call_fields import call_name, new_call_id
from bot.llm.call_scan import answer_text
from bot.llm.dialects import TextCalls, read_text_calls
from bot.llm.echoes import third_party_text
from bot.llm.markup import MARKERS, is_the_answer, without_markup
from bot.llm.port import ToolCall
from bot.llm.quirks import Quirk
from bot.llm.reasoning import join_reasoning, split_reasoning
from bot.llm.template import clean_template, may_hold_debris
from bot.text.sanitize import clean_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReadingRules:
    """What a request's answer is read against."""

    offered: frozenset[str] = frozenset()  # the tools the request offered
    text_calls: bool = True  # calls written as text may be read at all
    messages: Sequence[Mapping[str, Any]] = ()  # the request's messages

    @cached_property
    def echoes(self) -> str:
        """The request's third-party text (tool results, quoted blocks), joined: markup that
        stands in it is the model quoting, not calling (bot.llm.echoes). Read only for an
        answer that holds markup."""
        return third_party_text(self.messages)


# `llm.tool_calls`: where calls written as text are read.
AUTO, NATIVE, TEXT = "auto", "native", "text"


def reads_text_calls(setting: str, native_seen: bool) -> bool:
    """`text`: always; `native`: never; `auto`: until the endpoint has sent a structured
    call (it then writes its calls natively, and markup in its text is words)."""
    return setting == TEXT or (setting == AUTO and not native_seen)


@dataclass
class Reading:
    content: str | None
    tool_calls: list[ToolCall]
    reasoning: str | None
    quirks: tuple[str, ...] = field(default=())


_MARKUP = re.compile(r"[<\[{&]")


def read_answer(content: str | None, calls: list[ToolCall], reasoning: str | None,
                rules: ReadingRules, quirks: tuple[str, ...] = ()) -> Reading:
    """`content` (cleaned already) with its thinking, text-form calls and template debris
    read; `calls` are the structured ones; `reasoning` what the server put in a reasoning
    field."""
    found = list(quirks)
    if not reasoning and not _MARKUP.search(content or "") and '"name"' not in (content or ""):
        # Plain words (most answers): no thinking, call or debris can hide in them; every
        # form read below opens with "<", "[", "{" or "&".
        text = content if content and content.strip() else None
        return Reading(text, calls, None, tuple(dict.fromkeys(found)))
    if reasoning:
        found.append(Quirk.REASONING_FIELD)
    # (the request's third-party text is only gathered when a closing tag could be a quote)
    thought = split_reasoning(content or "", rules.echoes if "</" in (content or "") else "")
    if thought.blocks:
        found.append(Quirk.THINK_UNOPENED if thought.unopened else Quirk.THINK_BLOCKS)
    visible: str | None = thought.visible
    if visible and (not calls or any(m in visible for m in MARKERS)):
        calls, visible = _text_calls(visible, calls, rules, found)
    if visible and may_hold_debris(visible):
        cleaned = clean_template(visible, rules.offered)
        visible = cleaned.text
        if cleaned.template_tokens:
            found.append(Quirk.TEMPLATE_TOKENS)
        if cleaned.imitated and not calls:
            found.append(Quirk.IMITATED_RESULT)
    text = visible if visible and visible.strip() else None
    return Reading(text, calls, join_reasoning(reasoning, thought.reasoning),
                   tuple(dict.fromkeys(found)))


def _text_calls(visible: str, calls: list[ToolCall], rules: ReadingRules,
                found: list[str]) -> tuple[list[ToolCall], str | None]:
    """The calls written in `visible` when they are the model's own (see the module), and
    what is left to show."""
    text_calls = read_text_calls(visible, rules.offered) \
        if not calls and rules.text_calls else None
    if text_calls is None or not text_calls.calls:
        has_markup = any(m in visible for m in MARKERS)
        return calls, without_markup(visible) if has_markup else visible
    if _echoed(text_calls, rules.echoes):
        log.warning("an answer quoted call markup that stands in third-party text of the "
                    "turn (%s): read as text, not run", ", ".join(c.name for c in
                                                                  text_calls.calls)[:200])
        found.append(Quirk.ECHOED_CALL)
        return calls, None if text_calls.quirk == Quirk.BARE_JSON else without_markup(visible)
    if text_calls.quirk != Quirk.BARE_JSON and not is_the_answer(visible):
        found.append(Quirk.CALL_IN_PROSE)
        return calls, without_markup(visible)
    read = [ToolCall(new_call_id(), call_name(clean_text(c.name)), c.arguments)
            for c in text_calls.calls]
    found.append(text_calls.quirk)
    return read, answer_text(text_calls.rest)


def _echoed(text_calls: TextCalls, echoes: str) -> bool:
    """The answer's call markup stands in the turn's third-party text."""
    if not echoes:
        return False
    if text_calls.quirk == Quirk.BARE_JSON:
        return '"name"' in echoes and any(f'"{c.name}"' in echoes for c in text_calls.calls)
    return any(m in echoes for m in _MARKERS_OF[text_calls.quirk])


# The markup each text form is written with (a Qwen3-Coder call may stand inside Hermes tags).
_MARKERS_OF = {Quirk.HERMES: ("<tool_call>",), Quirk.FUNCTION_TAGS: ("<tool_call>", "<function="),
               Quirk.MISTRAL: ("[TOOL_CALLS]",), Quirk.PYTHON_TAG: ("<|python_tag|>",)}
