"""The settings types other parts are built from, owned by configuration (so bot.config
imports none of them): who may talk (`AccessSettings`), how the outbox delivers
(`DeliveryPolicy`), and every knob of the loop (`ReactLoopConfig`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pydantic


class ChannelAccess(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    policy: Literal["allowlist", "pairing"] = "pairing"
    allow: list[str] = []


class AccessSettings(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    channels: dict[str, ChannelAccess] = {}
    pairing_ttl_minutes: int = pydantic.Field(60, gt=0)
    # Per channel: when full, the oldest pending request expires to make room for a new one.
    max_pending_pairings: int = pydantic.Field(3, gt=0)
    # Wrong /link codes (and other guessable codes) a sender may try per window, then silence.
    max_code_guesses: int = pydantic.Field(5, gt=0)
    code_guess_window_minutes: int = pydantic.Field(60, gt=0)

    def for_channel(self, channel: str) -> ChannelAccess:
        return self.channels.get(channel, ChannelAccess())


@dataclass
class DeliveryPolicy:
    max_attempts: int = 6
    base_delay: float = 2.0
    max_delay: float = 600.0
    poll_seconds: float = 1.0
    stale_sending_seconds: float = 120.0
    concurrency: int = 32  # messages being sent at once, to different addresses
    batch: int = 200  # addresses one scan readies (the rest at the next)
    channel_probe_seconds: float = 30.0  # a channel that is down is tried again this often


@dataclass
class ReactLoopConfig:
    """Every knob of the loop, in one place."""

    # auto: a greeting or a thanks is answered from a request without tool schemas, anything
    # else with tools; react: always tools; simple: never (bot.turn.modes).
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

    # The `delegate` tool (bot.loop.subtasks): a sub-task in a fresh context with the tools named,
    # its own step limit, tokens and time; its cost counts in the turn's.
    subtasks: bool = True
    subtask_max_turns: int = 6
    subtask_token_budget: int = 40_000
    subtask_timeout_seconds: float = 120.0
    # Per turn (a message, a triggered run): sub-tasks it may start, and run at once. Their
    # LLM requests count against the person's rate limit (bot.loop.subtask_llm).
    subtask_max_per_turn: int = 3
    subtask_concurrency: int = 2

    llm_max_retries: int = 3
    llm_retry_base_delay: float = 1.0
    llm_retry_max_delay: float = 30.0

    final_answer_instruction: str = (
        "You have used all the steps available for this request. Give your final answer now "
        "from what you have gathered, and say plainly what you could not finish.")
