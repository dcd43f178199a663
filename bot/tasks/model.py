"""The paused-task model: one task waiting for a person, and what the pool tells them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from bot.contracts.pause import PausedTask

if TYPE_CHECKING:
    from bot.contracts.tool_context import ToolExecutionContext
    from bot.tools.registry import ToolOutcome


@dataclass(frozen=True)
class PoolNotice:
    """Something the pool did that the user must hear about."""

    user_id: str
    task: PausedTask
    reason: str  # "expired", "evicted" (over the per-user limit), "dropped" (cannot restore)
    detail: str = ""


# --- resuming: what the agents runtime implements and returns -----------------------------


class Fit(Enum):
    ANSWER = "answer"  # passes the field's checks, and the checks mean something
    NEXT_MESSAGE = "next"  # the next message is the answer (ask_user), if this was the latest
    FREE = "free"  # plain text: anything passes, so the checks cannot tell
    INVALID = "invalid"  # fails the checks: a bad attempt (ask again) or something else
    NO = "no"  # certainly not an answer to this task


@dataclass(frozen=True)
class Verdict:
    fit: Fit
    ask_again: str = ""  # for INVALID: the question to repeat, with what was wrong


@dataclass(frozen=True)
class Resumed:
    """What answering a task led to. outcome.status: WAITING (asks again; outcome.pause is the
    updated task), SUCCESS or FAILED (finished), DENIED (the user said no; content is the
    reply)."""

    outcome: ToolOutcome
    arguments: dict[str, Any]  # what the finished call ran with, for the synthetic call


class TaskHandler(Protocol):
    """Restores and continues paused tasks (the agents runtime implements it)."""

    def check(self, task: PausedTask) -> str | None:
        """Why the task cannot be restored (agent gone, InputFields changed), or None."""
        ...

    def verdict(self, task: PausedTask, text: str, ctx: ToolExecutionContext) -> Verdict: ...

    async def answer(self, task: PausedTask, text: str, ctx: ToolExecutionContext) -> Resumed:
        ...

    def limit_for(self, name: str) -> int | None:
        """Most tasks of this name one user may have waiting (None: only the pool's limit)."""
        ...
