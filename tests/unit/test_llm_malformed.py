"""Answers that are not completions (a 200 with an HTML page, broken JSON, `null`, no choices,
a null message, absurdly deep arguments) are LLM errors at the call: retried with bounded
backoff through the error table, then given up; never a crash that re-runs the turn."""

from __future__ import annotations

import json

import pytest

from bot.contracts.clock import FakeClock
from bot.llm.openai_client import MAX_ARGUMENT_DEPTH, json_depth
from bot.llm.port import LLMMalformedResponseError
from bot.llm.recovery import ERROR_HANDLERS, call_with_recovery, retry_with_backoff
from tests.fakes.fake_openai import Raw, Reply, ToolCall
from tests.helpers import loop_config

COMPLETION_HEAD = {"id": "x", "object": "chat.completion", "created": 0, "model": "m"}

MALFORMED = {
    "an HTML error page with status 200": Raw("<html><body>Bad gateway</body></html>"),
    "JSON cut short": Raw('{"id": "x", "choices": [', content_type="application/json"),
    "a JSON null": Raw("null", content_type="application/json"),
    "no choices": Raw(json.dumps({**COMPLETION_HEAD, "choices": []}),
                      content_type="application/json"),
    "a null message": Raw(json.dumps({**COMPLETION_HEAD, "choices": [
        {"index": 0, "message": None, "finish_reason": "stop"}]}),
        content_type="application/json"),
    "arguments nested 40 deep": Reply(tool_calls=[ToolCall(
        "lookup", "[" * 40 + "]" * 40)]),
}


@pytest.mark.parametrize("answer", MALFORMED.values(), ids=MALFORMED.keys())
async def test_an_answer_that_is_not_a_completion_is_a_malformed_response_error(
        fake_llm, llm, answer):
    fake_llm.script(answer)
    with pytest.raises(LLMMalformedResponseError):
        await llm.complete([{"role": "user", "content": "hi"}], None)


async def test_a_malformed_stream_is_a_malformed_response_error(fake_llm, llm):
    fake_llm.script(Raw("data: {not json\n\n", content_type="text/event-stream"))

    async def ignore(_: str) -> None:
        return None

    with pytest.raises(LLMMalformedResponseError):
        await llm.complete([{"role": "user", "content": "hi"}], None, on_text=ignore)


async def test_arguments_nested_within_the_limit_pass(fake_llm, llm):
    nested = "[" * MAX_ARGUMENT_DEPTH + "]" * MAX_ARGUMENT_DEPTH
    fake_llm.script(Reply(tool_calls=[ToolCall("lookup", {"topic": nested})]))
    response = await llm.complete([{"role": "user", "content": "hi"}], None)
    assert json.loads(response.tool_calls[0].arguments)["topic"] == nested  # a string: depth 1


def test_json_depth_ignores_brackets_inside_strings():
    assert json_depth('{"a": "[[[[{{{{", "b": [1, [2]]}') == 3
    assert json_depth('"\\"[[["') == 0
    assert json_depth("") == 0


def test_malformed_answers_are_retried_with_backoff_then_given_up():
    cfg = loop_config(llm_max_retries=2, llm_retry_base_delay=1.0)
    assert ERROR_HANDLERS[LLMMalformedResponseError] is retry_with_backoff
    err = LLMMalformedResponseError("not JSON")
    assert [type(retry_with_backoff(err, n, cfg)).__name__ for n in (1, 2, 3)] == [
        "Retry", "Retry", "GiveUp"]


async def test_one_unreadable_answer_is_retried_at_the_call(fake_llm, llm):
    clock = FakeClock()
    fake_llm.script(Raw("<html>upstream hiccup</html>"), Reply(content="fine now"))
    outcome = await call_with_recovery(
        llm, lambda level: [{"role": "user", "content": "hi"}], None,
        loop_config(llm_retry_base_delay=0.5), clock, max_recovery_level=3)
    assert outcome.response.content == "fine now"
    assert outcome.retries == 1 and clock.slept == [0.5]
    assert fake_llm.calls == 2


async def test_unreadable_answers_every_time_give_up_after_the_bounded_retries(fake_llm, llm):
    clock = FakeClock()
    fake_llm.script(*[Raw("<html>down</html>")] * 3)
    with pytest.raises(LLMMalformedResponseError):
        await call_with_recovery(
            llm, lambda level: [{"role": "user", "content": "hi"}], None,
            loop_config(llm_max_retries=2, llm_retry_base_delay=0.5), clock,
            max_recovery_level=3)
    assert fake_llm.calls == 3 and clock.slept == [0.5, 1.0]
