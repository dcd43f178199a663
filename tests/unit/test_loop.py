"""The ReAct loop through the real openai client against the fake server."""

from __future__ import annotations

import asyncio

import pytest

from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import EventType, LoopEvent, TurnStop
from bot.llm.port import LLMAuthError, LLMServerError
from bot.tools.registry import ToolStatus
from tests.fakes.fake_openai import ContextOverflow, Fail, Hang, Reply, ToolCall
from tests.helpers import CountingTools, assert_closed, loop_config, run_loop, said, until


async def test_plain_answer_needs_no_tools(fake_llm, llm):
    fake_llm.script(Reply(content="Hi there!"))
    result = await run_loop(llm, CountingTools().registry())
    assert result.response == "Hi there!"
    assert result.stop_reason is TurnStop.FINAL_ANSWER
    assert result.turns == 1
    assert result.new_messages == [{"role": "assistant", "content": "Hi there!"}]
    assert "tools" in fake_llm.requests[0]


async def test_two_calls_of_one_turn_run_concurrently_then_answer(fake_llm, llm):
    tools = CountingTools()
    fake_llm.script(
        Reply(tool_calls=[ToolCall("wait_for_peer", {"me": "a", "peer": "b"}),
                          ToolCall("wait_for_peer", {"me": "b", "peer": "a"})]),
        Reply(content="both done"))
    # Each call finishes only after the other has started: run one after the other, the first
    # would wait for ever (the 5 s tool timeout would turn it into a TIMEOUT).
    result = await run_loop(llm, tools.registry(), cfg=loop_config(tool_execution_timeout=5))
    assert result.response == "both done"
    assert [r.success for r in result.tool_calls] == [True, True]
    sent = fake_llm.requests[1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == ["a saw b", "b saw a"]
    assert_closed(sent)


async def test_failures_become_tool_results_and_the_loop_goes_on(fake_llm, llm):
    fake_llm.script(
        Reply(tool_calls=[ToolCall("explode", {}), ToolCall("no_such_tool", {}),
                          ToolCall("lookup", "{not json"), ToolCall("lookup", {"wrong": 1}),
                          ToolCall("sleepy", {"seconds": 30}), ToolCall("lookup", {"topic": "x"})]),
        Reply(content="partial answer"))
    result = await run_loop(llm, CountingTools().registry(),
                            cfg=loop_config(tool_execution_timeout=0.2))
    assert result.stop_reason is TurnStop.FINAL_ANSWER
    statuses = [r.result_status for r in result.tool_calls]
    assert statuses == ["failed", "invalid", "invalid", "invalid", "timeout", "success"]
    results = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "the widget broke" in results[0]
    assert "no tool named 'no_such_tool'" in results[1] and "lookup" in results[1]
    assert "not valid JSON" in results[2]
    assert "topic" in results[3]
    assert "did not finish" in results[4]
    assert results[5] == "facts about x"
    assert_closed(fake_llm.requests[1]["messages"])


async def test_max_turns_forces_a_final_answer_without_tools(fake_llm, llm):
    counter = iter(range(100))
    fake_llm.responder = lambda req: (
        Reply(tool_calls=[ToolCall("lookup", {"topic": f"t{next(counter)}"})])
        if req.get("tools") else Reply(content="here is what I found"))
    result = await run_loop(llm, CountingTools().registry(), cfg=loop_config(max_turns=3))
    assert result.stop_reason is TurnStop.MAX_TURNS
    assert result.response == "here is what I found"
    last = fake_llm.requests[-1]
    assert "tools" not in last
    assert "final answer" in said(last["messages"][-1]["content"])
    assert fake_llm.calls == 4
    assert_closed(result.new_messages)


async def test_tool_calls_in_the_last_no_tools_call_still_get_results(fake_llm, llm):
    fake_llm.responder = lambda req: Reply(tool_calls=[ToolCall("lookup", {"topic": "again"})])
    result = await run_loop(llm, CountingTools().registry(),
                            cfg=loop_config(max_turns=1, repeat_guard_limit=5))
    assert result.stop_reason is TurnStop.MAX_TURNS
    skipped = [m for m in result.new_messages if m["role"] == "tool"][-1]
    assert "step limit" in skipped["content"]
    assert result.new_messages[-1]["role"] == "assistant"
    assert result.response
    assert_closed(result.new_messages)


async def test_repeat_guard_stops_the_same_call_again_and_again(fake_llm, llm):
    tools = CountingTools()
    fake_llm.responder = lambda req: (
        Reply(tool_calls=[ToolCall("lookup", {"topic": "same"})]) if req.get("tools")
        else Reply(content="I keep finding the same thing"))
    result = await run_loop(llm, tools.registry(), cfg=loop_config(repeat_guard_limit=2))
    assert result.stop_reason is TurnStop.REPEAT_GUARD
    assert tools.calls == ["lookup:same", "lookup:same"]
    assert result.tool_calls[-1].result_status == "skipped"
    assert_closed(result.new_messages)


async def test_deadline_closes_unfinished_calls(fake_llm, llm):
    fake_llm.script(Reply(tool_calls=[ToolCall("sleepy", {"seconds": 30}),
                                      ToolCall("lookup", {"topic": "fast"})]))
    clock = FakeClock()  # the deadline is on the injected clock: the test moves it
    fast_done = asyncio.Event()

    async def emit(event: LoopEvent) -> None:
        if event.type is EventType.TOOL_RESULT and event.data["name"] == "lookup":
            fast_done.set()

    task = asyncio.create_task(run_loop(llm, CountingTools().registry(), clock=clock,
                                        emit=emit, cfg=loop_config(turn_deadline_seconds=0.5)))
    await asyncio.wait_for(fast_done.wait(), 10)
    clock.advance(1)
    result = await asyncio.wait_for(task, 10)
    assert result.stop_reason is TurnStop.DEADLINE
    assert [r.result_status for r in result.tool_calls] == ["skipped", "success"]
    assert_closed(result.new_messages)
    assert fake_llm.calls == 1


async def test_a_hanging_llm_call_stops_at_the_deadline_on_the_clock(fake_llm, llm):
    fake_llm.script(Hang(60))
    clock = FakeClock()
    task = asyncio.create_task(run_loop(llm, CountingTools().registry(), clock=clock,
                                        cfg=loop_config(turn_deadline_seconds=300)))
    while fake_llm.calls < 1:  # noqa: ASYNC110 (the fake server has no event to wait on)
        await asyncio.sleep(0.01)
    clock.advance(299)
    await asyncio.sleep(0.05)
    assert not task.done()  # one second left
    clock.advance(2)
    result = await asyncio.wait_for(task, 10)  # no real waiting for the five minutes
    assert result.stop_reason is TurnStop.DEADLINE
    assert fake_llm.calls == 1


async def test_cancel_closes_running_calls(fake_llm, llm):
    fake_llm.script(Reply(tool_calls=[ToolCall("sleepy", {"seconds": 30})]))
    cancel = asyncio.Event()
    tools = CountingTools()
    task = asyncio.create_task(run_loop(llm, tools.registry(), cancel=cancel))
    await until(lambda: any(c.startswith("sleepy:") for c in tools.calls),
                "the tool call running")  # whatever the pace, cancelled while it runs
    cancel.set()
    result = await task
    assert result.stop_reason is TurnStop.CANCELLED
    assert "cancelled by the user" in result.new_messages[1]["content"]
    assert_closed(result.new_messages)


async def test_rate_limit_backs_off_at_least_retry_after(fake_llm, llm):
    clock = FakeClock()
    fake_llm.script(Fail(429, retry_after=7), Reply(content="ok"))
    result = await run_loop(llm, CountingTools().registry(), clock=clock)
    assert result.response == "ok"
    assert clock.slept and clock.slept[0] >= 7


async def test_server_errors_retry_a_bounded_number_of_times(fake_llm, llm):
    clock = FakeClock()
    fake_llm.responder = lambda req: Fail(500)
    with pytest.raises(LLMServerError):
        await run_loop(llm, CountingTools().registry(), clock=clock,
                       cfg=loop_config(llm_max_retries=2))
    assert fake_llm.calls == 3
    assert clock.slept == [0.5, 1.0]


async def test_auth_errors_go_to_the_caller_at_once(fake_llm, llm):
    fake_llm.script(Fail(401))
    with pytest.raises(LLMAuthError):
        await run_loop(llm, CountingTools().registry())
    assert fake_llm.calls == 1


async def test_a_timeout_is_retried_once(fake_llm):
    from bot.llm.openai_client import OpenAILLM
    from bot.llm.port import LLMTimeoutError

    quick = OpenAILLM(base_url=fake_llm.base_url, api_key="t", model="m", timeout=0.2)
    try:
        fake_llm.script(Hang(5), Reply(content="second try"))
        assert (await run_loop(quick, CountingTools().registry())).response == "second try"
        fake_llm.script(Hang(5), Hang(5), Reply(content="never"))
        with pytest.raises(LLMTimeoutError):
            await run_loop(quick, CountingTools().registry())
    finally:
        await quick.close()


async def test_context_overflow_recovers_by_shrinking_the_view(fake_llm, llm):
    history = []
    for i in range(30):
        history += [{"role": "user", "content": f"question {i}"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"c{i}", "type": "function",
                         "function": {"name": "lookup", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": "x\n" * 3000},
                    {"role": "assistant", "content": f"answer {i}"}]
    original = [dict(m) for m in history]
    fake_llm.script(ContextOverflow(), ContextOverflow(), Reply(content="fits now"))
    result = await run_loop(llm, CountingTools().registry(), history=history)
    assert result.response == "fits now"
    sizes = [len(str(r["messages"])) for r in fake_llm.requests]
    assert sizes[0] > sizes[1] > sizes[2]
    for request in fake_llm.requests:
        assert_closed(request["messages"][1:])
    assert history == original  # the raw history is never rewritten
    assert any("trim" in d for d in result.diagnostics)


async def test_context_overflow_gives_up_kindly(fake_llm, llm):
    fake_llm.responder = lambda req: ContextOverflow()
    result = await run_loop(llm, CountingTools().registry())
    assert result.stop_reason is TurnStop.CONTEXT_OVERFLOW
    assert "too long" in result.response
    assert fake_llm.calls == 4  # normal, trim, truncate all, force trim


async def test_stream_events_tell_the_whole_run(fake_llm, llm):
    fake_llm.script(Reply(content="let me check", tool_calls=[ToolCall("lookup", {"topic": "t"})]),
                    Reply(content="the answer is here"))
    events: list[LoopEvent] = []

    async def emit(event: LoopEvent) -> None:
        events.append(event)

    result = await run_loop(llm, CountingTools().registry(), emit=emit,
                            cfg=loop_config(stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] is EventType.MESSAGE_START
    assert EventType.TOOL_CALL_START in kinds and EventType.TOOL_RESULT in kinds
    assert kinds[-1] is EventType.EXECUTION_END
    chunks = "".join(e.data["text"] for e in events if e.type is EventType.MESSAGE_CHUNK)
    assert "the answer is here" in chunks.replace("  ", " ")
    assert result.response == "the answer is here"
    start = next(e for e in events if e.type is EventType.TOOL_CALL_START)
    assert start.data["progress"] == "using lookup"


async def test_records_say_what_each_call_did(fake_llm, llm):
    fake_llm.script(Reply(tool_calls=[ToolCall("lookup", {"topic": "x" * 500})], usage=(100, 7)),
                    Reply(content="done", usage=(150, 3)))
    result = await run_loop(llm, CountingTools().registry())
    record = result.tool_calls[0]
    assert record.name == "lookup" and record.success
    assert len(record.args_summary["topic"]) <= 80
    assert record.result_chars == len("facts about " + "x" * 500)
    assert record.token_attribution.input_tokens == 100
    assert result.token_usage.input_tokens == 250 and result.token_usage.output_tokens == 10


async def test_huge_tool_results_are_capped_with_the_original_size_recorded(fake_llm, llm):
    from bot.tools.registry import ToolRegistry, tool

    @tool
    async def dump() -> str:
        """A lot of text."""
        return "line\n" * 100_000

    fake_llm.script(Reply(tool_calls=[ToolCall("dump", {})]), Reply(content="ok"))
    result = await run_loop(llm, ToolRegistry([dump.__valet_tool__]),
                            cfg=loop_config(max_tool_result_chars=10_000))
    assert result.tool_calls[0].result_chars == 500_000
    stored = result.new_messages[1]["content"]
    assert len(stored) < 10_100 and "truncated" in stored
    assert ToolStatus.SUCCESS.value == result.tool_calls[0].result_status


async def test_a_simple_turn_offers_no_tools_and_becomes_react_when_the_model_asks(fake_llm,
                                                                                    llm):
    tools = CountingTools()
    fake_llm.script(Reply(tool_calls=[ToolCall("lookup", {"topic": "tides"})]),
                    Reply(content="High tide at 6."))
    result = await run_loop(llm, tools.registry(), mode="simple")
    assert "tools" not in fake_llm.requests[0]  # auto guessed "no tool needed"...
    assert "tools" in fake_llm.requests[1]  # ...and the turn got its tools once it did
    assert tools.calls == ["lookup:tides"] and result.response == "High tide at 6."
    assert result.mode == "react"


async def test_loop_mode_simple_never_runs_a_tool(fake_llm, llm):
    tools = CountingTools()
    fake_llm.script(Reply(content="Let me look.",
                          tool_calls=[ToolCall("lookup", {"topic": "tides"})]))
    result = await run_loop(llm, tools.registry(), cfg=loop_config(mode="simple"),
                            mode="simple")
    assert tools.calls == [] and fake_llm.calls == 1
    assert result.response == "Let me look." and result.mode == "simple"
    assert result.stop_reason is TurnStop.FINAL_ANSWER
    assert_closed(result.new_messages)
