"""ToolMessageMasker: another provider's tool rounds flattened in the view, nothing else."""

from __future__ import annotations

import copy

from bot.loop.masking import WRITTEN_BY, ToolMessageMasker
from tests.helpers import assert_closed


def call(call_id: str, name: str, args: str, by: str | None) -> dict:  # type: ignore[type-arg]
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]}
    return {**msg, WRITTEN_BY: by} if by else msg


HISTORY = [
    {"role": "user", "content": "weather and 6*7?"},
    call("toolu_1", "weather", '{"place": "Lyon"}', "anthropic"),
    {"role": "tool", "tool_call_id": "toolu_1", "content": "Overcast, 4°C"},
    call("call_2", "calculate", '{"expression": "6*7"}', "openai"),
    {"role": "tool", "tool_call_id": "call_2", "content": "42"},
    call("call_approval_9", "send_email", "{}", None),  # joined later: writer unknown
    {"role": "tool", "tool_call_id": "call_approval_9", "content": "Sent."},
    {"role": "assistant", "content": "Overcast; 42; sent."},
]


def test_only_another_providers_rounds_are_flattened_and_the_raw_history_is_untouched():
    raw = copy.deepcopy(HISTORY)
    cuts: list[str] = []
    view = ToolMessageMasker().view(raw, "openai", cuts)
    assert raw == HISTORY  # never changed in place
    assert [m["role"] for m in view] == ["user", "assistant", "assistant", "tool", "assistant",
                                         "tool", "assistant"]
    flat = view[1]["content"]
    assert "weather" in flat and "Lyon" in flat and "Overcast, 4°C" in flat
    assert "toolu_1" not in str(view)
    assert view[2]["tool_calls"][0]["id"] == "call_2"  # its own: as written
    assert all(WRITTEN_BY not in m for m in view)
    assert_closed(view)
    assert cuts == ["flattened 1 tool round(s) written by another model for openai"]


def test_without_a_reader_nothing_is_flattened_but_the_bookkeeping_never_leaves():
    view = ToolMessageMasker().view(HISTORY, None, [])
    assert [m.get("tool_calls", [{}])[0].get("id") for m in view if m.get("tool_calls")] == [
        "toolu_1", "call_2", "call_approval_9"]
    assert all(WRITTEN_BY not in m for m in view)
    untagged = [m for m in HISTORY if WRITTEN_BY not in m]
    assert ToolMessageMasker().view(untagged, "openai", []) is untagged  # nothing to do
