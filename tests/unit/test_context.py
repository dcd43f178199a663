"""ContextManager: the request view, never the raw history."""

from __future__ import annotations

import copy

from bot.config.policies import ReactLoopConfig
from bot.loop.context import (
    FORCE_TRIM,
    NORMAL,
    TRIM,
    TRUNCATE_ALL,
    ContextManager,
    close_tool_calls,
)
from tests.helpers import assert_closed

SYSTEM = [{"role": "system", "content": "persona"}]


def exchange(i: int, result: str = "ok") -> list[dict]:
    return [{"role": "user", "content": f"q{i}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": result},
            {"role": "assistant", "content": f"a{i}"}]


def test_a_long_tool_result_is_cut_at_a_newline_with_a_marker():
    cm = ContextManager(ReactLoopConfig(context_token_limit=1000, max_tool_result_share=0.3))
    assert cm.tool_result_limit == 1200  # 30% of 1000 tokens at 4 chars a token
    text = "".join(f"line {i:04d}\n" for i in range(1000))
    cut, original = cm.truncate_tool_result(text)
    assert original == len(text)
    assert cut.split("\n[...")[0].endswith("line 0119")  # 120 whole lines of 10 chars
    assert "truncated: showing" in cut
    assert cm.truncate_tool_result("short") == ("short", None)


def test_the_hard_character_cap_wins_over_the_share():
    cm = ContextManager(ReactLoopConfig(context_token_limit=10_000_000, max_tool_result_chars=500))
    assert cm.tool_result_limit == 500


def test_small_history_passes_through_untouched():
    cm = ContextManager(ReactLoopConfig())
    history = exchange(1) + exchange(2)
    view = cm.build(SYSTEM, history)
    assert view.messages == SYSTEM + history
    assert view.cuts == []


def test_over_the_threshold_it_keeps_the_recent_messages_and_never_splits_a_call():
    cfg = ReactLoopConfig(context_token_limit=2000, max_history_messages=40)
    cm = ContextManager(cfg)
    history = [m for i in range(50) for m in exchange(i, "r" * 100)]
    raw = copy.deepcopy(history)
    view = cm.build(SYSTEM, history)
    assert view.messages[0] == SYSTEM[0]
    assert view.messages[1]["role"] == "user"
    assert view.messages[-1] == history[-1]
    assert view.estimated_tokens <= 2000 * 0.8
    assert_closed(view.messages[1:])
    assert any("dropped" in c for c in view.cuts)
    assert history == raw


def test_recovery_levels_shrink_step_by_step():
    cm = ContextManager(ReactLoopConfig(truncate_all_tool_result_chars=50))
    history = [m for i in range(30) for m in exchange(i, "x" * 5000)]
    sizes = [cm.build(SYSTEM, history, level).estimated_tokens
             for level in (NORMAL, TRIM, TRUNCATE_ALL, FORCE_TRIM)]
    assert sizes[0] > sizes[1] > sizes[2] > sizes[3]
    forced = cm.build(SYSTEM, history, FORCE_TRIM).messages
    assert len(forced) <= 1 + 5
    assert_closed(forced[1:])
    truncated = cm.build(SYSTEM, history, TRUNCATE_ALL).messages
    assert all(len(m["content"]) < 200 for m in truncated if m["role"] == "tool")


def test_a_view_never_starts_with_an_orphan_result():
    cm = ContextManager(ReactLoopConfig(force_trim_messages=2))
    history = exchange(1) + exchange(2)[:3]  # ends: user, assistant(call), tool
    view = cm.build(SYSTEM, history, FORCE_TRIM)
    assert view.messages[1]["role"] != "tool"
    assert_closed(view.messages[1:])


def test_dangling_calls_and_orphans_are_repaired_in_the_view_only():
    broken = exchange(1)[:2] + [{"role": "user", "content": "next"},
                                 {"role": "tool", "tool_call_id": "zzz", "content": "stray"}]
    cuts: list[str] = []
    fixed = close_tool_calls(broken, cuts)
    assert_closed(fixed)
    assert len(broken) == 4
    assert any("orphan" in c for c in cuts) and any("unanswered" in c for c in cuts)


def fifty_call_turn(question: str) -> list[dict]:
    calls = [{"id": f"k{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
             for i in range(50)]
    return ([{"role": "user", "content": question},
             {"role": "assistant", "content": None, "tool_calls": calls}]
            + [{"role": "tool", "tool_call_id": f"k{i}", "content": "ok"} for i in range(50)])


def test_the_current_question_survives_every_level_after_a_long_turn():
    cm = ContextManager(ReactLoopConfig())
    history = exchange(1, "x" * 500_000) + fifty_call_turn("and now the fifty checks?")
    for level in (NORMAL, TRIM, TRUNCATE_ALL, FORCE_TRIM):
        view = cm.build(SYSTEM, history, level)
        users = [m["content"] for m in view.messages if m["role"] == "user"]
        assert users[-1] == "and now the fifty checks?", level
        assert_closed(view.messages[1:])
        assert view.messages[-1] == history[-1]
    forced = cm.build(SYSTEM, history, FORCE_TRIM)
    assert [m["role"] for m in forced.messages[:3]] == ["system", "user", "assistant"]
    assert any("kept the current user message" in c for c in forced.cuts)


def test_a_current_message_too_big_for_the_window_is_cut_and_the_cut_is_said():
    cm = ContextManager(ReactLoopConfig(context_token_limit=10_000))
    huge = "".join(f"{i:09d}\n" for i in range(50_000))  # 500 KB
    history = exchange(0) + fifty_call_turn(huge)
    for level in (NORMAL, TRIM, TRUNCATE_ALL, FORCE_TRIM):
        view = cm.build(SYSTEM, history, level)
        current = [m["content"] for m in view.messages if m["role"] == "user"][-1]
        assert current.startswith("000000000\n000000001\n"), level
        assert "the message was cut to fit: showing" in current
        assert any(c.startswith("truncated the current user message from 500000")
                   for c in view.cuts)
        assert view.estimated_tokens <= 10_000 * 0.8
        assert_closed(view.messages[1:])
    assert history[4]["content"] == huge  # the raw history is untouched


def photo_message(caption: str, image_bytes: int) -> dict:
    data = "A" * (image_bytes * 4 // 3)  # its base64, as the request carries it
    return {"role": "user", "content": [
        {"type": "text", "text": caption},
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}"}}]}


def test_a_photo_costs_its_caption_and_a_fixed_image_price_not_its_base64_length():
    cm = ContextManager(ReactLoopConfig(image_tokens=1000, chars_per_token=4.0))
    photo = photo_message("what plant is this?", image_bytes=3_000_000)
    text_only = {"role": "user", "content": "what plant is this?"}
    assert cm.estimate_tokens([photo]) == cm.estimate_tokens([text_only]) + 1000


def test_a_photo_being_answered_is_kept_whole_by_every_trim():
    cm = ContextManager(ReactLoopConfig(context_token_limit=4000, image_tokens=1000,
                                        force_trim_messages=2))
    history = [m for i in range(30) for m in (
        {"role": "user", "content": f"question {i} " + "words " * 40},
        {"role": "assistant", "content": f"answer {i} " + "words " * 40})]
    photo = photo_message("and this one?", image_bytes=2_000_000)
    for level in (NORMAL, TRIM, TRUNCATE_ALL, FORCE_TRIM):
        view = cm.build([{"role": "system", "content": "sys"}], [*history, photo], level)
        assert view.messages[-1] is photo, level
        assert view.estimated_tokens < 4000
