"""A request the server refused as invalid (llama.cpp's HTTP 500 "Failed to parse tool call
arguments as JSON", an OpenAI 400) is never sent again as it was: it is repaired once, or
the error stands. The repair: every tool call of the history whose arguments are not a JSON
object goes back with `{}` (its result, already in the history, says what became of it), so
the turn is answered without the unreadable part."""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def readable_arguments(text: Any) -> bool:
    """True when a call's arguments are a JSON object (what every server takes back)."""
    if not isinstance(text, str):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def repaired(messages: list[Message]) -> list[Message] | None:
    """`messages` with every unreadable tool-call argument replaced by `{}`; None when there
    was nothing to repair (the request cannot be made valid here)."""
    changed = False
    out: list[Message] = []
    for msg in messages:
        calls = msg.get("tool_calls")
        if not calls:
            out.append(msg)
            continue
        fixed = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and not readable_arguments(function.get("arguments")):
                call = {**call, "function": {**function, "arguments": "{}"}}
                changed = True
            fixed.append(call)
        out.append({**msg, "tool_calls": fixed})
    return out if changed else None
