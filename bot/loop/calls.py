"""One round of tool calls: every call the LLM asked for in one answer, run concurrently, each
with its own timeout, to exactly one outcome each (real or synthetic), in the order asked."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

from bot.config.policies import ReactLoopConfig
from bot.contracts.envelopes import EventSink, EventType, LoopEvent
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import LLMResponse, ToolCall, summarize_args
from bot.loop.context import ContextManager
from bot.loop.state import LoopDeps, LoopRun
from bot.loop.traces import tool_entry
from bot.loop.types import ToolCallRecord
from bot.text.untrusted import holds_untrusted
from bot.tools.calls import run_tool_call
from bot.tools.capabilities import OPEN_TOOL
from bot.tools.registry import ToolOutcome, ToolStatus


def opens_while_calling(calls: list[ToolCall]) -> bool:
    """One answer that opens a capability and calls something else in the same breath."""
    return len(calls) > 1 and any(c.name == OPEN_TOOL for c in calls)


def synthetic(call: ToolCall, status: ToolStatus, content: str) -> ToolOutcome:
    return ToolOutcome(call.id, call.name, status, content, 0, synthetic=True)


async def run_calls(deps: LoopDeps, run: LoopRun, response: LLMResponse,
                    tool_ctx: ToolExecutionContext, emit: EventSink,
                    cancel: asyncio.Event | None) -> list[ToolOutcome]:
    """All calls of one LLM turn, concurrently, each with its own timeout; one outcome each,
    in the order the LLM asked for them."""

    step = run.llm_step
    # The taint (docs/security.md): third-party text anywhere in what the model read makes
    # every change ask first (also in a sub-task whose turn held some: its flag comes in
    # set), and so do the tool names, descriptions and schemas an untrusted MCP server wrote,
    # offered in this request, and an answer that opens a capability while it calls: tools
    # the person never saw offered do not change anything unasked. The gate
    # (bot.approvals.flow) is the one place that reads it.
    tool_ctx = replace(tool_ctx, untrusted_context=tool_ctx.untrusted_context
                       or deps.offers_untrusted(run.messages) or holds_untrusted(run.messages)
                       or opens_while_calling(response.tool_calls))

    async def one(call: ToolCall) -> ToolOutcome:
        found = deps.registry.get(call.name)
        await emit(LoopEvent(EventType.TOOL_CALL_START, {
            "call_id": call.id, "name": call.name, "arguments": summarize_args(call.arguments),
            "progress": found.progress if found else call.name}))
        outcome = await _run_one(deps, run, step, call, tool_ctx)
        await run.journal.finished(step, outcome)  # durable as soon as it is known
        await emit(LoopEvent(EventType.TOOL_RESULT, {
            "call_id": call.id, "name": call.name, "status": outcome.status.value,
            "duration_ms": outcome.duration_ms}))
        return outcome

    tasks = [asyncio.create_task(one(call)) for call in response.tool_calls]
    try:
        await _wait_or_cancel(tasks, run, cancel)
    except asyncio.CancelledError:  # the turn itself is cancelled: its calls go with it
        for task in tasks:
            task.cancel()
        raise
    outcomes = []
    for call, task in zip(response.tool_calls, tasks, strict=True):
        if task.done() and not task.cancelled() and task.exception() is None:
            outcome = task.result()
        else:
            task.cancel()
            why = "cancelled by the user" if cancel is not None and cancel.is_set() \
                else "the time for this request ran out"
            outcome = synthetic(call, ToolStatus.SKIPPED, f"Not finished: {why}.")
            await run.journal.finished(step, outcome)
        outcome = _cap_size(deps.context, run.cfg, outcome)
        outcomes.append(outcome)
        run.trace.append(tool_entry(step, call, outcome))
        if outcome.usage is not None:  # a sub-task's own LLM calls count in the turn's
            run.usage.add(outcome.usage)
        if outcome.trace is not None:
            run.trace.append(outcome.trace)
            run.sub_requests += sum(1 for e in outcome.trace.get("entries") or ()
                                    if e.get("kind") == "llm")
        run.records.append(ToolCallRecord(
            name=call.name, args_summary=summarize_args(call.arguments),
            duration_ms=outcome.duration_ms, success=not outcome.is_error,
            result_status=outcome.result_status or outcome.status.value,
            result_chars=outcome.truncated_from or len(outcome.content),
            token_attribution=response.usage, call_id=call.id, outcome=outcome.status.value))
    return outcomes


async def _wait_or_cancel(tasks: list[asyncio.Task[ToolOutcome]], run: LoopRun,
                          cancel: asyncio.Event | None) -> None:
    """Until every task is done, the turn's deadline passes (on the clock), or the user
    stops the turn."""
    if not tasks:
        return
    alarm = asyncio.ensure_future(run.clock.wait_until(run.deadline))
    stopper = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    waiters: set[asyncio.Future[Any]] = {asyncio.gather(*tasks, return_exceptions=True), alarm}
    if stopper is not None:
        waiters.add(stopper)
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        alarm.cancel()
        if stopper is not None:
            stopper.cancel()


async def _run_one(deps: LoopDeps, run: LoopRun, step: int, call: ToolCall,
                   tool_ctx: ToolExecutionContext) -> ToolOutcome:
    signature = (call.name, _canonical(call.arguments))
    run.seen[signature] += 1
    if run.seen[signature] > run.cfg.repeat_guard_limit:
        run.repeat_tripped = True
        return synthetic(call, ToolStatus.SKIPPED,
                         f"Not run: {call.name} was already called with these exact arguments "
                         f"{run.cfg.repeat_guard_limit} times in this request. Use the earlier "
                         "results.")
    found = deps.registry.get(call.name)
    known = run.journal.known_outcome(step, call, found)
    if known is not None:  # done (or cut short) in an earlier run of this turn
        return known
    refused = deps.tool_choice.refusal(call.name, run.messages) if deps.tool_choice else None
    if refused is not None:  # its capability was not in front of the model
        return synthetic(call, ToolStatus.INVALID, refused)
    if found is not None and deps.gate is not None:
        gated = await deps.gate(call, found, tool_ctx.for_call(call.id))
        if gated is not None:
            return gated
    timeout = run.cfg.agent_tool_execution_timeout if found is not None and found.is_agent \
        else run.cfg.tool_execution_timeout
    if found is not None:
        await run.journal.starting(step, call)
    return await run_tool_call(deps.registry, call, tool_ctx, timeout)


def _cap_size(context: ContextManager, cfg: ReactLoopConfig, outcome: ToolOutcome
              ) -> ToolOutcome:
    if len(outcome.content) <= cfg.max_tool_result_chars:
        return outcome
    text, original = context.truncate_tool_result(outcome.content, cfg.max_tool_result_chars)
    return replace(outcome, content=text, truncated_from=original)


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        return arguments
