"""One tool call run to exactly one outcome; a tool's result as the text the model reads.

A failing, slow or unknown tool becomes a tool result the loop hands back to the model,
never a crash; the tools themselves are bot.tools.registry'.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from typing import Any

from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import ToolCall
from bot.text.sanitize import clean_text
from bot.tools.registry import ToolOutcome, ToolRegistry, ToolStatus

log = logging.getLogger(__name__)


def _outcome(call: ToolCall, status: ToolStatus, content: str, started: float,
             **extra: Any) -> ToolOutcome:
    return ToolOutcome(call.id, call.name, status, content,
                       int((time.perf_counter() - started) * 1000), **extra)


async def run_tool_call(registry: ToolRegistry, call: ToolCall, ctx: ToolExecutionContext,
                        timeout: float) -> ToolOutcome:
    """Run one call to exactly one outcome; never raises (except cancellation). The content
    is cleaned (bot.text.sanitize): a page or a file may carry NUL or bytes no store can take."""
    outcome = await _run_tool_call(registry, call, ctx, timeout)
    content = clean_text(outcome.content)
    return outcome if content == outcome.content else replace(outcome, content=content)


async def _run_tool_call(registry: ToolRegistry, call: ToolCall, ctx: ToolExecutionContext,
                         timeout: float) -> ToolOutcome:
    started = time.perf_counter()
    found = registry.get(call.name)
    if found is None:
        known = ", ".join(registry.names()) or "none"
        return _outcome(call, ToolStatus.INVALID, f"Error: there is no tool named "
                        f"'{call.name}'. Available tools: {known}.", started)
    try:
        arguments = found.parse_arguments(call.arguments)
    except ValueError as err:
        return _outcome(call, ToolStatus.INVALID, f"Error: {err}", started)
    limit = found.timeout or timeout
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            result = await found.invoke(arguments, ctx.for_call(call.id))
    except TimeoutError as err:
        if deadline.expired():
            return _outcome(call, ToolStatus.TIMEOUT,
                            f"Error: {call.name} did not finish within {limit:g} s.", started)
        return _outcome(call, ToolStatus.FAILED, f"Error: TimeoutError: {err or 'timed out'}",
                        started)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # a failing tool becomes a tool result, never a crash
        log.warning("tool %s failed: %s", call.name, err, exc_info=True)
        return _outcome(call, ToolStatus.FAILED,
                        f"Error: {type(err).__name__}: {err}", started)
    if isinstance(result, ToolOutcome):
        return replace(result, call_id=call.id, name=call.name,
                       duration_ms=int((time.perf_counter() - started) * 1000))
    return _outcome(call, ToolStatus.SUCCESS, render_result(result), started)


def render_result(result: Any) -> str:
    if result is None:
        return "Done."
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)
