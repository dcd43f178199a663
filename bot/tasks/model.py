"""The paused-task model: one task waiting for a person, and what the pool tells them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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
