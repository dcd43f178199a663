"""The approval model: a risky action waiting for its owner's word, and its states.

An approval is bound to its user, its tool call and the exact arguments (and their hash): on
approval the stored arguments run, never regenerated ones; an edit is a new approval.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from bot.contracts.envelopes import ApprovalPrompt
from bot.contracts.options import OPTIONS, Option


class ApprovalStatus(Enum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"  # an edit replaced it with a new approval
    EXECUTING = "executing"
    # What became of an approved action (ExecutionStatus says the same of one run):
    EXECUTED = "executed"  # it ran and did what it was asked
    REFUSED = "refused"  # it was not done: its tool declined (read-only calendar, no such note)
    FAILED = "failed"  # it was tried and failed (an error)
    UNKNOWN = "unknown"  # it may or may not have happened (its process died mid-send)
    INTERRUPTED = "interrupted"  # its process died before it started: nothing was done


# The outcomes of an approved action: settled, its conversation may hear of it.
OUTCOMES = (ApprovalStatus.EXECUTED, ApprovalStatus.REFUSED, ApprovalStatus.FAILED,
            ApprovalStatus.UNKNOWN, ApprovalStatus.INTERRUPTED)


class ExecutionStatus(Enum):
    """What became of one attempt to run an approved action (`ApprovalFlow.execute`), read
    from the tool's typed outcome (bot.tools.registry.ToolOutcome), never from "it raised
    nothing"."""

    EXECUTED = "executed"  # it ran and did what it was asked
    REFUSED = "refused"  # nothing was done: the tool declined, or the request no longer holds
    FAILED = "failed"  # it ran and failed, or came back unfinished
    UNKNOWN = "unknown"  # it may have acted (a send cut off, a timeout, its lease lost)
    INTERRUPTED = "interrupted"  # its process died before it started: nothing was done
    ALREADY_HANDLED = "already_handled"  # someone else began it first: nothing ran here

    @property
    def record(self) -> ApprovalStatus:
        """The request's status for this outcome."""
        return ApprovalStatus(self.value)


@dataclass(frozen=True)
class ExecutionOutcome:
    """One run of an approved action, as a value: its status, and the content the
    conversation hears as the call's result. `told`: the person has been told already (the
    sweeper settled it under the running action)."""

    status: ExecutionStatus
    content: str
    told: bool = False


def new_approval_id() -> str:
    """Random and unique; it says nothing about order (the store orders by created_at and a
    per-user sequence, never by a wall-clock id)."""
    return secrets.token_hex(16)


def args_hash(arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class ApprovalDraft:
    """What a gated call (or an agent at its approval point) leaves as its outcome's `pause`;
    the orchestrator turns it into a durable ApprovalRequest when the turn is written."""

    tool_name: str
    call_id: str
    arguments: dict[str, Any]
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    allow_modification: bool = True


def waiting_result(draft: ApprovalDraft) -> str:
    return (f"Not run yet: waiting for the user's approval of “{draft.summary}”. The app has "
            "asked them; it runs only if they approve. Do not call it again or claim it is "
            "done.")


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    code: str
    user_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    args_hash: str
    summary: str
    details: dict[str, Any]
    expires_at: datetime
    created_at: datetime
    status: ApprovalStatus = ApprovalStatus.PENDING
    options: tuple[Option, ...] = OPTIONS
    allow_modification: bool = True
    task_id: str | None = None  # the paused task (agent) it belongs to
    source: str = "chat"  # or "trigger"
    trigger_task_id: str | None = None
    replaces: str | None = None
    turn_id: str | None = None
    decided_by: str | None = None
    result: str | None = None
    lease_until: datetime | None = None  # while approved or executing: a live process owns it

    def intact(self) -> bool:
        """The arguments are the ones that were approved (fail closed on tampering)."""
        return args_hash(self.arguments) == self.args_hash

    def prompt(self, position: int = 1) -> ApprovalPrompt:
        """The request as channels show it (each renders it its own way)."""
        return ApprovalPrompt(
            id=self.id, code=self.code, position=position, summary=self.summary,
            details=tuple((k, _shown(v)) for k, v in self.details.items()),
            options=self.options if self.allow_modification else tuple(
                o for o in self.options if o is not Option.EDIT),
            allow_modification=self.allow_modification, expires_at=self.expires_at)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
