"""What the ReAct loop is given and what it returns: every knob in one `ReactLoopConfig`, the
persona's fallback lines, and the `ReactLoopResult` with a record per tool call. (How the loop runs
is `bot.loop.react`.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.contracts.envelopes import TurnStop
from bot.llm.port import TokenUsage
from bot.tools.registry import ToolOutcome
from persona.lines import ConversationLines

Message = dict[str, Any]
SIMPLE, REACT = "simple", "react"  # how a turn runs (bot.turn.modes): without tools, or with them


# What the person reads when the LLM cannot give the answer (too_long, deadline, no_answer,
# cancelled): the persona's conversation lines, defaults in persona/lines.py.
FallbackLines = ConversationLines


@dataclass
class ToolCallRecord:
    name: str
    args_summary: dict[str, Any]
    duration_ms: int
    success: bool
    result_status: str
    result_chars: int
    token_attribution: TokenUsage | None = None  # usage of the LLM turn that asked for it
    call_id: str = ""
    outcome: str = ""  # the ToolStatus value (result_status may be an agent's own word)


@dataclass(frozen=True)
class Spent:
    """What a turn that failed had spent (its /debug trace): how long it ran, the tokens of
    the requests that were answered, and its trace up to the failure."""

    duration_ms: int
    input_tokens: int
    output_tokens: int
    mode: str
    trace: list[dict[str, Any]]


@dataclass
class ReactLoopResult:
    response: str
    turns: int
    tool_calls: list[ToolCallRecord]
    token_usage: TokenUsage
    duration_ms: int
    stop_reason: TurnStop
    pauses: list[ToolOutcome] = field(default_factory=list)
    new_messages: list[Message] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)  # bot.loop.traces entries, in order
    mode: str = "react"  # how the turn ran (bot.turn.modes): "react", or "simple" (no tools)
    llm_requests: int = 0  # LLM calls the run made (a replayed answer counts: it was paid for)
