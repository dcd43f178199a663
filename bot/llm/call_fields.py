"""The fields of a tool call as the OpenAI API takes them back: a valid tool name, an id for a
call that came without one, the names of the tools offered, the arguments as JSON text."""

from __future__ import annotations

import json
import re
import secrets
import string
from typing import Any

# A tool name as OpenAI's API takes it back in the history. A name written as text that is
# not one (empty, spaces, dots) is stored as this instead: the loop answers "no tool named
# unreadable_tool_call", the model writes the call again, and the stored call stays valid
# for any server (it is never changed into a name that exists).
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


UNREADABLE = "unreadable_tool_call"


def call_name(written: str) -> str:
    name = written.strip()
    return name if TOOL_NAME.fullmatch(name) else UNREADABLE


def new_call_id() -> str:
    """An id for a call that came without one: nine letters and digits, the one shape every
    server accepts back (Mistral's validator wants exactly that)."""
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(9))


def tool_names(tools: list[dict[str, Any]] | None) -> frozenset[str]:
    """The names of the tools a request offers."""
    names = set()
    for tool in tools or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return frozenset(names)


def arguments_text(value: Any) -> str:
    """A call's arguments as JSON text. An object becomes its JSON; a string is the JSON the
    model wrote, unwrapped once when it is a JSON string holding an object (double-encoded)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    stripped = value.strip()
    if stripped.startswith('"'):
        try:
            inner = json.loads(stripped)
            if isinstance(inner, str) and isinstance(json.loads(inner), dict):
                return inner
        except (ValueError, RecursionError):
            pass
    return value
