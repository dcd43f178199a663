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
from collections.abc import Awaitable
from enum import Enum
from typing import Any, Literal, TypeVar

from bot.config.policies import ReactLoopConfig
from bot.contracts.envelopes import EventSink, EventType, LoopEvent, TurnStop
from bot.contracts.steering import Steering
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import LLMContextExhaustedError, LLMError, LLMResponse, short_error
from bot.llm.quirks import Quirk
from bot.llm.recovery import CallOutcome, call_with_recovery
from bot.loop.calls import run_calls, synthetic
from bot.loop.context import MAX_LEVEL
from bot.loop.fallback import ModelSlot, on_models
from bot.loop.journal import TurnRecorder
from bot.loop.masking import WRITTEN_BY
from bot.loop.state import LoopDeps, LoopRun
from bot.loop.steering import steer
from bot.loop.traces import failed_entry, llm_entry, switch_entry
from bot.loop.types import REACT, SIMPLE, FallbackLines, ReactLoopResult, Spent
from bot.tools.registry import ToolOutcome, ToolStatus

log = logging.getLogger(__name__)
Message = dict[str, Any]


async def _no_events(event: LoopEvent) -> None:
    return None


async def react_loop(
    deps: LoopDeps, system: list[Message], history: list[Message],
    tool_ctx: ToolExecutionContext, cfg: ReactLoopConfig, *,
    emit: EventSink | None = None, fallback: FallbackLines | None = None,
    cancel: asyncio.Event | None = None, turn_id: str | None = None, mode: str = REACT,
    summary: str = "", steering: Steering | None = None, token_budget: int = 0,
) -> ReactLoopResult:
    """Run the loop over `history` (which ends with the user's message). The caller persists
    `result.new_messages`; `history` itself is not modified. With `deps.journal` and a
    `turn_id`, every step is journalled, and a turn redone continues from its journal.
    `mode` SIMPLE: no tool schemas are offered (bot.turn.modes); `summary`: the conversation's
    running summary, carried in every request; `steering`: messages the person sends while
    the turn runs join it before the next LLM call (bot.loop.steering); `token_budget` (0: none):
    past it, the loop stops as at its step limit (a sub-task's own budget)."""
    started = time.perf_counter()  # for the duration reported; the deadline is the clock's
    run = LoopRun(cfg, deps.clock, deps.clock.monotonic() + cfg.turn_deadline_seconds,
                  list(history), await TurnRecorder.open(deps.journal, turn_id), mode=mode,
                  summary=summary, steering=steering, token_budget=token_budget)
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
    except LLMError as err:  # what the person added mid-turn is kept with the failure
        err.said_mid_turn = tuple(str(m["content"]) for m in run.new if m["role"] == "user")
        err.spent = Spent(int((time.perf_counter() - started) * 1000), run.usage.input_tokens,
                          run.usage.output_tokens, run.mode, list(run.trace))
        raise
    await emit(LoopEvent(EventType.EXECUTION_END, {"stop_reason": stop.value}))
    return ReactLoopResult(
        response=text, turns=run.turns, tool_calls=run.records, token_usage=run.usage,
        duration_ms=int((time.perf_counter() - started) * 1000), stop_reason=stop,
        pauses=pauses, new_messages=run.new, diagnostics=run.diagnostics, trace=run.trace,
        mode=run.mode, llm_requests=run.llm_step + run.sub_requests + run.asked_again)


async def _iterate(deps: LoopDeps, run: LoopRun, system: list[Message],
                   tool_ctx: ToolExecutionContext, emit: EventSink, lines: FallbackLines,
                   cancel: asyncio.Event | None,
                   ) -> tuple[TurnStop, str, list[ToolOutcome]]:
    while run.turns < run.cfg.max_turns:
        if cancel is not None and cancel.is_set():
            return TurnStop.CANCELLED, _final_text(run, lines.cancelled), []
        run.turns += 1
        await steer(run, run.steering)  # what the person added while the turn ran
        tools: list[dict[str, Any]] | None
        if run.mode == REACT:
            tools = await deps.tool_schemas(run.messages)
        else:  # a greeting in auto mode: the conversation's tools, if any (the cache)
            tools = deps.kept_tools() if run.cfg.mode != SIMPLE else None
        response = await _call_llm(deps, run, system, emit, tools=tools, cancel=cancel)
        if response is Unanswered.STOPPED:  # /stop while the model was still writing
            return TurnStop.CANCELLED, _final_text(run, lines.cancelled), []
        if response is Unanswered.DEADLINE:
            return TurnStop.DEADLINE, _final_text(run, lines.deadline), []
        if not response.tool_calls:
            text = said(response, lines)
            run.append({"role": "assistant", "content": text})
            return TurnStop.FINAL_ANSWER, text, []
        if run.mode == SIMPLE:  # asked for tools it was not offered
            if run.cfg.mode == SIMPLE:  # never any: the calls are closed, unrun
                return TurnStop.FINAL_ANSWER, _close_unoffered(run, response, lines), []
            run.mode = REACT  # auto guessed wrong: the turn gets its tools
        run.append(_written(deps, run, response))
        outcomes = await run_calls(deps, run, response, tool_ctx, emit, cancel)
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
        if run.token_budget and run.usage.total >= run.token_budget:
            break  # its budget is spent: a last word, as at the step limit
    return TurnStop.MAX_TURNS, await _last_word(deps, run, system, emit, lines), []


async def _call_llm(deps: LoopDeps, run: LoopRun, system: list[Message], emit: EventSink, *,
                    tools: list[dict[str, Any]] | None, extra: list[Message] | None = None,
                    cancel: asyncio.Event | None = None) -> LLMResponse | Unanswered:
    """One LLM call within the turn's deadline, on the model in use or, when it keeps failing,
    the next fallback: its LLMResponse, or why there is none (Unanswered). A response the
    journal holds for this step is reused: no request is made."""
    run.llm_step += 1
    models = deps.models
    replayed = _replayed(deps, run, tools)
    if replayed is not None:
        return replayed
    if run.remaining() <= 0:
        return Unanswered.DEADLINE

    tools_chars = len(json.dumps(tools)) if tools else 0  # the tools are sent too

    def view(level: int, slot: ModelSlot) -> list[Message]:
        built = deps.context.build(system, run.messages, level, tools_chars,
                                   reader=slot.provider, summary=run.summary,
                                   window=getattr(slot.llm, "context_tokens", None))
        if built.cuts:
            run.diagnostics.extend(built.cuts)
        return built.messages + (extra or [])

    on_text = None
    if run.cfg.stream:
        async def on_text(chunk: str) -> None:
            await emit(LoopEvent(EventType.MESSAGE_CHUNK, {"text": chunk}))

    def attempt(slot: ModelSlot) -> Awaitable[CallOutcome]:
        return call_with_recovery(
            slot.llm, lambda level: view(level, slot), tools, run.cfg, deps.clock,
            max_recovery_level=MAX_LEVEL, start_level=run.level, on_text=on_text)

    def switched(left: ModelSlot, taken: ModelSlot, err: LLMError) -> None:
        log.warning("model %s failed (%s); the turn goes on with %s", left.llm.model,
                    type(err).__name__, taken.llm.model)
        run.trace.append(switch_entry(run.llm_step, left.llm.model, taken.llm.model,
                                      f"{type(err).__name__}: {short_error(err)}"))
        run.diagnostics.append(f"switched model {left.llm.model} -> {taken.llm.model}")

    await emit(LoopEvent(EventType.MESSAGE_START, {"turn": run.turns}))
    asked = time.perf_counter()
    try:
        raced = await _race(run, on_models(models, run.model, attempt, switched), cancel)
    except TimeoutError:
        return Unanswered.DEADLINE
    except LLMError as err:  # the turn fails here: its trace says after how long, and why
        run.trace.append(failed_entry(run.llm_step, models[run.model].llm.model, err,
                                      int((time.perf_counter() - asked) * 1000)))
        raise
    if raced is Unanswered.STOPPED:
        return raced
    outcome, run.model = raced
    response = outcome.response
    await run.journal.responded(run.llm_step, response, outcome.recovery_level, run.model)
    run.level = outcome.recovery_level
    run.usage.add(response.usage)
    run.asked_again += response.requests - 1
    run.trace.append(llm_entry(run.llm_step, models[run.model].llm.model, response,
                               latency_ms=int((time.perf_counter() - asked) * 1000),
                               tools_offered=len(tools or ())))
    await emit(LoopEvent(EventType.MESSAGE_END, {
        "turn": run.turns, "text": response.content or "",
        "tool_calls": [c.name for c in response.tool_calls]}))
    return response


def _replayed(deps: LoopDeps, run: LoopRun,
              tools: list[dict[str, Any]] | None) -> LLMResponse | None:
    """The response the journal holds for this step, counted and traced as the call it stands
    for (on the model it was made with); None when the journal holds none."""
    models = deps.models
    replayed = run.journal.response(run.llm_step)
    if replayed is None:
        return None
    response, run.level = replayed
    run.model = min(run.journal.model(run.llm_step), len(models) - 1)
    run.usage.add(response.usage)
    run.asked_again += response.requests - 1
    run.trace.append(llm_entry(run.llm_step, models[run.model].llm.model, response,
                               latency_ms=0, tools_offered=len(tools or ()),
                               replayed=True))
    return response


def _written(deps: LoopDeps, run: LoopRun, response: LLMResponse) -> Message:
    """The assistant message that asks for tools, with who wrote it (bot.loop.masking)."""
    writer = deps.models[run.model].provider
    return {**response.assistant_message(), WRITTEN_BY: writer} if writer \
        else response.assistant_message()


async def _last_word(deps: LoopDeps, run: LoopRun, system: list[Message], emit: EventSink,
                     lines: FallbackLines) -> str:
    """A limit stopped the loop: one last call without tools for a final answer."""
    instruction = {"role": "user", "content": run.cfg.final_answer_instruction}
    response = await _call_llm(deps, run, system, emit, tools=None, extra=[instruction])
    if isinstance(response, Unanswered):  # no `cancel` here: only the deadline
        return _final_text(run, lines.deadline)
    return _close_unoffered(run, response, lines,
                            "Not run: the step limit for this request was reached.")


def _close_unoffered(run: LoopRun, response: LLMResponse, lines: FallbackLines,
                     why: str = "Not run: no tools are available for this request.") -> str:
    """The answer of a request made without tools. Some servers ignore "no tools": calls
    asked for anyway are closed unrun, so the history stays valid."""
    if response.tool_calls:
        run.append({**response.assistant_message(), "content": None})
        for call in response.tool_calls:
            run.append(synthetic(call, ToolStatus.SKIPPED, why).message())
    return _final_text(run, said(response, lines))


def said(response: LLMResponse, lines: FallbackLines) -> str:
    """What the person reads of a final answer. One that imitated a tool's result or call
    (bot.llm.template) is not passed off as done: the person is told nothing was."""
    if Quirk.IMITATED_RESULT in response.quirks:
        return "\n\n".join(t for t in (response.content, lines.imitated_result) if t)
    # Cut by llm.max_output_tokens: said so, unless the answer ended at a chat-template token
    # (bot.llm.template): what came after it was the template's, not the answer's.
    if response.content and response.finish_reason == "length" \
            and Quirk.TEMPLATE_TOKENS not in response.quirks:
        return f"{response.content}\n\n{lines.cut_short}"
    return response.content or lines.no_answer


def _final_text(run: LoopRun, text: str) -> str:
    run.append({"role": "assistant", "content": text})
    return text


class Unanswered(Enum):
    """Why an LLM call of the turn gave no response."""

    DEADLINE = "deadline"  # the turn's deadline passed before or while it was asked
    STOPPED = "stopped"  # `cancel` was set (/stop) while the model was still writing


T = TypeVar("T")


async def _race(run: LoopRun, work: Awaitable[T], cancel: asyncio.Event | None
                ) -> T | Literal[Unanswered.STOPPED]:
    """`work`'s result; Unanswered.STOPPED (the work abandoned) once `cancel` is set;
    TimeoutError once the turn's deadline passes on the clock. One wait for all three (an LLM
    call is the turn's longest await: a task and a wait less per call)."""
    task = asyncio.ensure_future(work)
    alarm = asyncio.ensure_future(run.clock.wait_until(run.deadline))
    stopper = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        await asyncio.wait({task, alarm} if stopper is None else {task, alarm, stopper},
                           return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        alarm.cancel()
        if stopper is not None:
            stopper.cancel()
    if task.done():
        return task.result() if not task.cancelled() else Unanswered.STOPPED
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    if stopper is not None and stopper.done() and not stopper.cancelled():
        return Unanswered.STOPPED
    raise TimeoutError
