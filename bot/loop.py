"""The ReAct loop: ask the LLM, run every tool call of its turn concurrently, feed the results
back, until it answers (or a limit stops it).

Invariant: every tool call gets exactly one result message, real or synthetic, before the next
LLM call and before the loop returns, whatever stopped it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bot.clock import Clock
from bot.context import MAX_LEVEL, ContextManager
from bot.envelopes import EventSink, EventType, LoopEvent, TurnStop
from bot.journal import TurnJournal, TurnRecorder
from bot.llm import (
    LLM,
    LLMContextExhaustedError,
    LLMResponse,
    TokenUsage,
    ToolCall,
    call_with_recovery,
    summarize_args,
)
from bot.loop_types import FallbackLines, ReactLoopConfig, ReactLoopResult, ToolCallRecord
from bot.tools import (
    Tool,
    ToolExecutionContext,
    ToolOutcome,
    ToolRegistry,
    ToolStatus,
    run_tool_call,
)
from bot.untrusted import holds_untrusted

log = logging.getLogger(__name__)
Message = dict[str, Any]

__all__ = ["CallGate", "FallbackLines", "LoopDeps", "ReactLoopConfig", "ReactLoopResult",
           "ToolCallRecord", "ToolChoice", "react_loop"]


# Decides, before a call runs, that it must not run now (approval needed): returns its outcome.
CallGate = Callable[[ToolCall, Tool, ToolExecutionContext], Awaitable[ToolOutcome | None]]


async def _no_events(event: LoopEvent) -> None:
    return None


@dataclass
class _Run:
    """The state of one loop run (never shared between runs)."""

    cfg: ReactLoopConfig
    clock: Clock
    deadline: float  # on the clock's monotonic reading
    messages: list[Message]  # raw history + this turn, sent through the ContextManager
    journal: TurnRecorder = field(default_factory=TurnRecorder)
    new: list[Message] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    records: list[ToolCallRecord] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    level: int = 0
    turns: int = 0
    llm_step: int = 0  # LLM calls so far: the journal's key for each response
    repeat_tripped: bool = False

    def append(self, msg: Message) -> None:
        self.messages.append(msg)
        self.new.append(msg)

    def remaining(self) -> float:
        return self.deadline - self.clock.monotonic()


class ToolChoice(Protocol):
    """Which tools a request carries, from the conversation so far (bot.capabilities)."""

    async def schemas(self, messages: list[Message]) -> list[dict[str, Any]]: ...

    def refusal(self, tool_name: str, messages: list[Message]) -> str | None: ...


@dataclass
class LoopDeps:
    llm: LLM
    registry: ToolRegistry
    context: ContextManager
    clock: Clock
    gate: CallGate | None = None
    journal: TurnJournal | None = None  # None: nothing recorded, nothing replayed
    tool_choice: ToolChoice | None = None  # None: every tool, every request

    async def tool_schemas(self, messages: list[Message]) -> list[dict[str, Any]]:
        if self.tool_choice is None:
            return self.registry.schemas()
        return await self.tool_choice.schemas(messages)


async def react_loop(
    deps: LoopDeps, system: list[Message], history: list[Message],
    tool_ctx: ToolExecutionContext, cfg: ReactLoopConfig, *,
    emit: EventSink | None = None, fallback: FallbackLines | None = None,
    cancel: asyncio.Event | None = None, turn_id: str | None = None,
) -> ReactLoopResult:
    """Run the loop over `history` (which ends with the user's message). The caller persists
    `result.new_messages`; `history` itself is not modified. With `deps.journal` and a
    `turn_id`, every step is journalled, and a turn redone continues from its journal."""
    started = time.perf_counter()  # for the duration reported; the deadline is the clock's
    run = _Run(cfg, deps.clock, deps.clock.monotonic() + cfg.turn_deadline_seconds,
               list(history), await TurnRecorder.open(deps.journal, turn_id))
    emit = emit or _no_events
    lines = fallback or FallbackLines()
    pauses: list[ToolOutcome]
    try:
        if run.journal.closed:  # stopped (/stop) before a restart: never replayed
            stop, text, pauses = TurnStop.CANCELLED, _final_text(run, lines.cancelled), []
        else:
            stop, text, pauses = await _iterate(deps, run, system, tool_ctx, emit, lines, cancel)
    except LLMContextExhaustedError:
        stop, text, pauses = TurnStop.CONTEXT_OVERFLOW, lines.too_long, []
        run.append({"role": "assistant", "content": text})
    await emit(LoopEvent(EventType.EXECUTION_END, {"stop_reason": stop.value}))
    return ReactLoopResult(
        response=text, turns=run.turns, tool_calls=run.records, token_usage=run.usage,
        duration_ms=int((time.perf_counter() - started) * 1000), stop_reason=stop,
        pauses=pauses, new_messages=run.new, diagnostics=run.diagnostics,
        llm_requests=run.llm_step)


async def _iterate(deps: LoopDeps, run: _Run, system: list[Message],
                   tool_ctx: ToolExecutionContext, emit: EventSink, lines: FallbackLines,
                   cancel: asyncio.Event | None,
                   ) -> tuple[TurnStop, str, list[ToolOutcome]]:
    while run.turns < run.cfg.max_turns:
        if cancel is not None and cancel.is_set():
            return TurnStop.CANCELLED, _final_text(run, lines.cancelled), []
        run.turns += 1
        call = _call_llm(deps, run, system, emit, tools=await deps.tool_schemas(run.messages))
        response = await _unless_cancelled(call, cancel)
        if response is _STOPPED:  # /stop while the model was still writing
            return TurnStop.CANCELLED, _final_text(run, lines.cancelled), []
        if response is None:
            return TurnStop.DEADLINE, _final_text(run, lines.deadline), []
        if not response.tool_calls:
            text = response.content or lines.no_answer
            run.append({"role": "assistant", "content": text})
            return TurnStop.FINAL_ANSWER, text, []
        run.append(response.assistant_message())
        outcomes = await _run_calls(deps, run, response, tool_ctx, emit, cancel)
        for outcome in outcomes:
            run.append(outcome.message())
        pauses = [o for o in outcomes if o.status is ToolStatus.WAITING]
        if pauses:
            for p in pauses:
                await emit(LoopEvent(EventType.STATE_CHANGE,
                                     {"call_id": p.call_id, "state": p.result_status}))
            return TurnStop.WAITING_FOR_USER, "\n\n".join(p.content for p in pauses), pauses
        if cancel is not None and cancel.is_set():
            return TurnStop.CANCELLED, _final_text(run, lines.cancelled), []
        if run.repeat_tripped:
            return TurnStop.REPEAT_GUARD, await _last_word(deps, run, system, emit, lines), []
    return TurnStop.MAX_TURNS, await _last_word(deps, run, system, emit, lines), []


async def _call_llm(deps: LoopDeps, run: _Run, system: list[Message], emit: EventSink, *,
                    tools: list[dict[str, Any]] | None,
                    extra: list[Message] | None = None) -> LLMResponse | None:
    """One LLM call within the turn's deadline; None when the deadline passed. A response the
    journal holds for this step is reused: no request is made."""
    run.llm_step += 1
    replayed = run.journal.response(run.llm_step)
    if replayed is not None:
        response, run.level = replayed
        run.usage.add(response.usage)
        return response
    if run.remaining() <= 0:
        return None

    def view(level: int) -> list[Message]:
        built = deps.context.build(system, run.messages, level)
        if built.cuts:
            run.diagnostics.extend(built.cuts)
        return built.messages + (extra or [])

    on_text = None
    if run.cfg.stream:
        async def on_text(chunk: str) -> None:
            await emit(LoopEvent(EventType.MESSAGE_CHUNK, {"text": chunk}))

    await emit(LoopEvent(EventType.MESSAGE_START, {"turn": run.turns}))
    try:
        outcome = await _before_deadline(run, call_with_recovery(
            deps.llm, view, tools, run.cfg, deps.clock, max_recovery_level=MAX_LEVEL,
            start_level=run.level, on_text=on_text))
    except TimeoutError:
        return None
    await run.journal.responded(run.llm_step, outcome.response, outcome.recovery_level)
    run.level = outcome.recovery_level
    run.usage.add(outcome.response.usage)
    await emit(LoopEvent(EventType.MESSAGE_END, {
        "turn": run.turns, "text": outcome.response.content or "",
        "tool_calls": [c.name for c in outcome.response.tool_calls]}))
    return outcome.response


async def _last_word(deps: LoopDeps, run: _Run, system: list[Message], emit: EventSink,
                     lines: FallbackLines) -> str:
    """A limit stopped the loop: one last call without tools for a final answer."""
    instruction = {"role": "user", "content": run.cfg.final_answer_instruction}
    response = await _call_llm(deps, run, system, emit, tools=None, extra=[instruction])
    if response is None:
        return _final_text(run, lines.deadline)
    if response.tool_calls:
        # Some servers ignore "no tools": close those calls so the history stays valid.
        run.append({**response.assistant_message(), "content": None})
        skipped = "Not run: the step limit for this request was reached."
        for call in response.tool_calls:
            run.append(_synthetic(call, ToolStatus.SKIPPED, skipped).message())
    return _final_text(run, response.content or lines.no_answer)


def _final_text(run: _Run, text: str) -> str:
    run.append({"role": "assistant", "content": text})
    return text


def _synthetic(call: ToolCall, status: ToolStatus, content: str) -> ToolOutcome:
    return ToolOutcome(call.id, call.name, status, content, 0, synthetic=True)


async def _run_calls(deps: LoopDeps, run: _Run, response: LLMResponse,
                     tool_ctx: ToolExecutionContext, emit: EventSink,
                     cancel: asyncio.Event | None) -> list[ToolOutcome]:
    """All calls of one LLM turn, concurrently, each with its own timeout; one outcome each,
    in the order the LLM asked for them."""

    step = run.llm_step
    # Third-party text anywhere in what the model read makes guarded tools ask first.
    tool_ctx = replace(tool_ctx, untrusted_context=holds_untrusted(run.messages))

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
            outcome = _synthetic(call, ToolStatus.SKIPPED, f"Not finished: {why}.")
            await run.journal.finished(step, outcome)
        outcome = _cap_size(deps.context, run.cfg, outcome)
        outcomes.append(outcome)
        run.records.append(ToolCallRecord(
            name=call.name, args_summary=summarize_args(call.arguments),
            duration_ms=outcome.duration_ms, success=not outcome.is_error,
            result_status=outcome.result_status or outcome.status.value,
            result_chars=outcome.truncated_from or len(outcome.content),
            token_attribution=response.usage, call_id=call.id, outcome=outcome.status.value))
    return outcomes


async def _wait_or_cancel(tasks: list[asyncio.Task[ToolOutcome]], run: _Run,
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


_STOPPED: Any = object()


async def _unless_cancelled(work: Awaitable[Any], cancel: asyncio.Event | None) -> Any:
    """`work`'s result, or _STOPPED (the work abandoned) once `cancel` is set."""
    if cancel is None:
        return await work
    task, stopper = asyncio.ensure_future(work), asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait([task, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return task.result() if not task.cancelled() else _STOPPED


async def _before_deadline(run: _Run, work: Awaitable[Any]) -> Any:
    """`work`'s result, or TimeoutError once the turn's deadline passes on the clock."""
    task = asyncio.ensure_future(work)
    alarm = asyncio.ensure_future(run.clock.wait_until(run.deadline))
    try:
        await asyncio.wait({task, alarm}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        alarm.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise TimeoutError
    return task.result()


async def _run_one(deps: LoopDeps, run: _Run, step: int, call: ToolCall,
                   tool_ctx: ToolExecutionContext) -> ToolOutcome:
    signature = (call.name, _canonical(call.arguments))
    run.seen[signature] += 1
    if run.seen[signature] > run.cfg.repeat_guard_limit:
        run.repeat_tripped = True
        return _synthetic(call, ToolStatus.SKIPPED,
                          f"Not run: {call.name} was already called with these exact arguments "
                          f"{run.cfg.repeat_guard_limit} times in this request. Use the earlier "
                          "results.")
    found = deps.registry.get(call.name)
    known = run.journal.known_outcome(step, call, found)
    if known is not None:  # done (or cut short) in an earlier run of this turn
        return known
    refused = deps.tool_choice.refusal(call.name, run.messages) if deps.tool_choice else None
    if refused is not None:  # its capability was not in front of the model
        return _synthetic(call, ToolStatus.INVALID, refused)
    if found is not None and deps.gate is not None:
        gated = await deps.gate(call, found, tool_ctx.for_call(call.id))
        if gated is not None:
            return gated
    timeout = run.cfg.agent_tool_execution_timeout if found is not None and found.is_agent \
        else run.cfg.tool_execution_timeout
    if found is not None:
        await run.journal.starting(step, call)
    return await run_tool_call(deps.registry, call, tool_ctx, timeout)


def _cap_size(context: ContextManager, cfg: ReactLoopConfig, outcome: ToolOutcome) -> ToolOutcome:
    if len(outcome.content) <= cfg.max_tool_result_chars:
        return outcome
    text, original = context.truncate_tool_result(outcome.content, cfg.max_tool_result_chars)
    return ToolOutcome(outcome.call_id, outcome.name, outcome.status, text, outcome.duration_ms,
                       outcome.synthetic, original, outcome.pause, outcome.result_status)


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        return arguments
