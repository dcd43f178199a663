"""What the ReAct loop is given and what it returns: every knob in one `ReactLoopConfig`, the
persona's fallback lines, and the `ReactLoopResult` with a record per tool call. (`bot.loop`
re-exports them; it holds how the loop runs.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from bot.envelopes import TurnStop
from bot.llm import TokenUsage
from bot.tools import ToolOutcome
from persona.lines import ConversationLines

Message = dict[str, Any]
SIMPLE, REACT = "simple", "react"  # how a turn runs (bot.modes): without tools, or with them


@dataclass
class ReactLoopConfig:
    """Every knob of the loop, in one place."""

    # auto: a greeting or a thanks is answered from a request without tool schemas, anything
    # else with tools; react: always tools; simple: never (bot.modes).
    mode: Literal["auto", "react", "simple"] = "auto"
    max_turns: int = 10
    turn_deadline_seconds: float = 300.0
    repeat_guard_limit: int = 2  # identical calls allowed per turn before the guard stops it
    stream: bool = False

    tool_execution_timeout: float = 30.0
    agent_tool_execution_timeout: float = 120.0
    max_tool_result_share: float = 0.3
    max_tool_result_chars: int = 400_000
    truncate_all_tool_result_chars: int = 2_000

    context_token_limit: int = 128_000
    context_trim_threshold: float = 0.8
    max_history_messages: int = 40
    force_trim_messages: int = 5
    chars_per_token: float = 4.0
    # The running summary of messages older than the view (bot.memory.compaction) is carried
    # ahead of the recent messages within this many tokens.
    summary_tokens: int = 600
    # What one image in a request is counted as (endpoints bill a picture by its tiles, not
    # by its base64 length): a fixed estimate that keeps trimming honest about photos.
    image_tokens: int = 1_000

    # The `delegate` tool (bot.subtasks): a sub-task in a fresh context with the tools named,
    # its own step limit, tokens and time; its cost counts in the turn's.
    subtasks: bool = True
    subtask_max_turns: int = 6
    subtask_token_budget: int = 40_000
    subtask_timeout_seconds: float = 120.0
    # Per turn (a message, a triggered run): sub-tasks it may start, and run at once. Their
    # LLM requests count against the person's rate limit (bot.allowance).
    subtask_max_per_turn: int = 3
    subtask_concurrency: int = 2

    llm_max_retries: int = 3
    llm_retry_base_delay: float = 1.0
    llm_retry_max_delay: float = 30.0

    final_answer_instruction: str = (
        "You have used all the steps available for this request. Give your final answer now "
        "from what you have gathered, and say plainly what you could not finish.")


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
    trace: list[dict[str, Any]] = field(default_factory=list)  # bot.traces entries, in order
    mode: str = "react"  # how the turn ran (bot.modes): "react", or "simple" (no tools)
    llm_requests: int = 0  # LLM calls the run made (a replayed answer counts: it was paid for)
