"""What every reading of call text shares: JSON values written one after another, a call's
body skipped, and what is left around the calls when it is only tags, fences and end tokens.
bot.llm.dialects reads the calls with them; bot.llm.markup decides with them whether the
markup is the answer."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# Tags, fences and end tokens around calls: never words a person reads.
STRAY = re.compile(r"</?tool_call>|<\|eom_id\|>|<\|eot_id\|>|</s>|```(?:json)?", re.I)


def answer_text(rest: str) -> str | None:
    """What remains around the calls, kept only when it is words a person could read (a
    leftover tag, fence or blank line is not)."""
    text = STRAY.sub("", rest).strip()
    return text if re.search(r"\w", text) else None


def after_name(body: str) -> str:
    """A Mistral segment from its arguments on (`name{…}`, `name[ARGS]{…}`, or `[{…}]`)."""
    if body[:1] in ("[", "{"):
        return body
    brace = body.find("{")
    return "" if brace == -1 else body[brace:]


def json_then_nothing(text: str) -> bool:
    """`text` is one JSON value and nothing a person could read after it (or nothing at all)."""
    if not text:
        return True
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return False
    return answer_text(text[end:]) is None


_CALL_NAME = re.compile(r"\s*(?:[A-Za-z_][\w.-]{0,100}(?:\[ARGS\])?)?\s*")


def past_call_body(text: str, pos: int) -> int:
    """After a call token: past the name and JSON that follow it, when they are there."""
    head = _CALL_NAME.match(text, pos)
    start = head.end() if head else pos
    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return pos
    return end


def flat(values: Iterator[Any]) -> list[Any]:
    """Values with arrays opened: `[{…}, {…}]` and `{…} {…}` both list their calls."""
    return [o for v in values for o in (v if isinstance(v, list) else [v])]


def json_values(text: str, *, whole: bool = False) -> Iterator[Any]:
    """The JSON values written one after another (whitespace, `;` or `,` between them).
    `whole`: nothing else may follow; the values read so far are dropped if something does."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n;,":
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            if whole:
                return
            break
        found.append(value)
    yield from found
