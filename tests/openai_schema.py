"""The rules OpenAI's Chat Completions API holds a request's messages to (its API reference,
and the 400s it answers: "An assistant message with 'tool_calls' must be followed by tool
messages responding to each 'tool_call_id'", "messages with role 'tool' must be a response to
a preceding message with 'tool_calls'"). The fake server refuses a request that breaks one
when told to be strict (FakeOpenAI.strict); tests also check messages with them directly."""

from __future__ import annotations

from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")


def problems(messages: Any) -> list[str]:
    """What OpenAI would refuse in `messages`, in words; empty when it would take them."""
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty array"]
    found: list[str] = []
    waiting: list[str] = []  # tool_call_ids of the last assistant message not yet answered
    for n, msg in enumerate(messages):
        where = f"messages[{n}]"
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            found.append(f"{where}: a message needs a role among {', '.join(ROLES)}")
            continue
        role = msg["role"]
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in waiting:
                found.append(f"{where}: messages with role 'tool' must be a response to a "
                             "preceding message with 'tool_calls'")
            else:
                waiting.remove(call_id)
            if not isinstance(msg.get("content"), str | list):
                found.append(f"{where}.content: a tool result's content must be a string")
            continue
        if waiting:
            found.append(f"{where}: an assistant message with 'tool_calls' must be followed "
                         f"by tool messages responding to each 'tool_call_id' (missing: "
                         f"{', '.join(waiting)})")
            waiting = []
        if role == "assistant":
            found += _assistant(msg, where)
            waiting = [c["id"] for c in msg.get("tool_calls") or ()
                       if isinstance(c, dict) and isinstance(c.get("id"), str)]
        elif not isinstance(msg.get("content"), str | list):
            found.append(f"{where}.content: a {role} message's content must be a string or "
                         "an array of parts")
    if waiting:
        found.append(f"the last assistant message's tool calls have no results: "
                     f"{', '.join(waiting)}")
    return found


def _assistant(msg: dict[str, Any], where: str) -> list[str]:
    found = []
    content, calls = msg.get("content"), msg.get("tool_calls")
    if content is not None and not isinstance(content, str | list):
        found.append(f"{where}.content: must be a string, an array of parts or null")
    if calls is None:
        if content is None:
            found.append(f"{where}: an assistant message needs content or tool_calls")
        return found
    if not isinstance(calls, list) or not calls:
        return found + [f"{where}.tool_calls: must be a non-empty array"]
    for i, call in enumerate(calls):
        at = f"{where}.tool_calls[{i}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
            found.append(f"{at}.id: required, a string")
        if not isinstance(call, dict) or call.get("type") != "function":
            found.append(f"{at}.type: must be 'function'")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                or not function["name"]:
            found.append(f"{at}.function.name: required, a string")
        elif not isinstance(function.get("arguments"), str):
            found.append(f"{at}.function.arguments: must be a string (JSON text)")
    return found


def assert_valid(messages: Any) -> None:
    found = problems(messages)
    assert not found, "\n".join(found)
