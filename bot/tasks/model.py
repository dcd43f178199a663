"""The paused-task model: one task waiting for a person, and what the pool tells them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.tools import ToolExecutionContext, ToolOutcome


@dataclass
class PausedTask:
    """One waiting task. Made by an Agent-Tool (or `ask_user`) as its outcome's `pause`."""

    kind: str  # "agent" or "ask_user"
    name: str  # the tool name the LLM called
    status: str  # "WAITING_FOR_INPUT" or "WAITING_FOR_APPROVAL"
    question: str  # what the user was asked, word for word
    label: str = "task"  # how the user hears about it: "note", "reminder"
    call_id: str = ""  # the tool call that paused (it got a "waiting" result)
    schema_version: str = ""
    fields: dict[str, Any] = field(default_factory=dict)  # collected so far (JSON data)
    state: dict[str, Any] = field(default_factory=dict)  # anything else to resume with
    id: str = ""
    user_id: str = ""
    position: int = 0  # order among the tasks paused in the same turn
    created_at: datetime | None = None
    asked_at: datetime | None = None
    expires_at: datetime | None = None


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
