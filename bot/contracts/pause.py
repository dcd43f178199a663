"""What a call that waits for the person leaves behind: a task waiting for an answer
(`PausedTask`, kept in the pool, bot.tasks) or an action waiting for approval
(`ApprovalDraft`, opened by bot.approvals). `Pause` is the one type of `ToolOutcome.pause`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.contracts.approvals import ApprovalDraft


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


Pause = PausedTask | ApprovalDraft
# A call's pause, or a sub-task's several (bot.loop.subtasks): what `ToolOutcome.pause` holds.
Pauses = Pause | tuple[Pause, ...]


def each_pause(pause: Pauses | None) -> tuple[Pause, ...]:
    """Every pause one call left (none, one, or a sub-task's several)."""
    if pause is None:
        return ()
    return pause if isinstance(pause, tuple) else (pause,)
