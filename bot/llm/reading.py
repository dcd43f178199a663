"""The one place a server's answer is read into an `LLMResponse`: structured tool calls as
sent (arguments as a string or an object); otherwise calls written into the text
(bot.llm.dialects); thinking in the text taken out (bot.llm.reasoning). What is left as
`content` is only words for a person, or None.

Markup (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`, `<function=`) is read as calls even
when the request offered no tools: the loop closes such calls unrun, as it does structured
ones, so the markup never reaches a person. Bare JSON is a call only when tools were offered
and it names one of them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.llm.call_fields import call_name, new_call_id
from bot.llm.dialects import answer_text, read_text_calls
from bot.llm.port import ToolCall
from bot.llm.quirks import Quirk
from bot.llm.reasoning import join_reasoning, split_reasoning
from bot.text.sanitize import clean_text


@dataclass
class Reading:
    content: str | None
    tool_calls: list[ToolCall]
    reasoning: str | None
    quirks: tuple[str, ...] = field(default=())


_MARKUP = re.compile(r"[<\[{]")


def read_answer(content: str | None, calls: list[ToolCall], reasoning: str | None,
                offered: frozenset[str], quirks: tuple[str, ...] = ()) -> Reading:
    """`content` (cleaned already) with its thinking and text-form calls read; `calls` are the
    structured ones; `reasoning` what the server put in a reasoning field."""
    found = list(quirks)
    if not reasoning and not _MARKUP.search(content or ""):
        # Plain words (most answers): no thinking and no call can hide in them; every form
        # read below opens with "<", "[" or "{".
        text = content if content and content.strip() else None
        return Reading(text, calls, None, tuple(dict.fromkeys(found)))
    if reasoning:
        found.append(Quirk.REASONING_FIELD)
    thought = split_reasoning(content or "")
    if thought.blocks:
        found.append(Quirk.THINK_UNOPENED if thought.unopened else Quirk.THINK_BLOCKS)
    visible: str | None = thought.visible
    if not calls and visible:
        text_calls = read_text_calls(visible, offered)
        if text_calls is not None and text_calls.calls:
            calls = [ToolCall(new_call_id(), call_name(clean_text(c.name)), c.arguments)
                     for c in text_calls.calls]
            visible = answer_text(text_calls.rest)
            found.append(text_calls.quirk)
    text = visible if visible and visible.strip() else None
    return Reading(text, calls, join_reasoning(reasoning, thought.reasoning),
                   tuple(dict.fromkeys(found)))
