"""The task model: what runs, when, how, and where its result goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from triggers.cron import next_cron_time, parse_cron


class TaskStatus(Enum):
    ACTIVE = "active"
    PAUSED = "paused"
    DISABLED = "disabled"  # switched off by the system (a broken trigger), not the person
    COMPLETED = "completed"  # a one-time task that ran
    PENDING_APPROVAL = "pending_approval"  # a run waits for the person's OK
    EXPIRED = "expired"  # a one-time run's approval was never given


class TriggerKind(Enum):
    CRON = "cron"
    INTERVAL = "interval"
    ONCE = "once"
    EVENT = "event"
    CONDITION = "condition"


class Misfire(Enum):
    """What happens to runs that fell due while no process was leading the schedule."""

    CATCH_UP = "catch_up"  # the latest missed run goes once if within the grace; older: missed
    SKIP = "skip"  # every run late by more than the grace is recorded "missed"


@dataclass(frozen=True)
class RunKey:
    """One run of one task. Its text form, `task:<task id>:<run>`, is the run's message key:
    the inbox dedupes the run's turn on it and the outbox its reply, so a run is queued and
    answered once. Only this type builds or reads that form."""

    task_id: str
    run: str  # unique per task: the scheduled time, an event id, a condition's edge

    PREFIX = "task:"

    def __str__(self) -> str:
        return f"{self.PREFIX}{self.task_id}:{self.run}"

    @classmethod
    def parse(cls, text: str) -> RunKey | None:
        """The key a message key names; None for anything else (a person's message)."""
        if not text.startswith(cls.PREFIX):
            return None
        task_id, sep, run = text[len(cls.PREFIX):].partition(":")
        return cls(task_id, run) if sep and task_id and run else None


class RunOutcome(Enum):
    SUBMITTED = "submitted"  # an orchestrator run is in the person's queue
    SENT = "sent"  # a deterministic executor queued its message
    UNREACHABLE = "unreachable"  # no channel reaches the person: nothing was sent
    NOTHING = "nothing"  # the run said it has nothing to report; nothing was sent
    MISSED = "missed"  # fell due while down, beyond its grace: not run
    FAILED = "failed"
    WAITING_APPROVAL = "waiting_approval"
    EXPIRED = "expired"  # its approval expired
    DONE = "done"  # its approvals were decided


@dataclass(frozen=True)
class EventFilter:
    """Which events start a task: source and type (`*` wildcards), and field equalities."""

    source: str = "*"
    type: str = "*"
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "type": self.type, "fields": self.fields}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EventFilter:
        return cls(data.get("source", "*"), data.get("type", "*"), dict(data.get("fields") or {}))


@dataclass(frozen=True)
class ConditionCheck:
    """A registered tool called with `arguments`, its result compared: `op` one of
    == != > >= < <= contains; the result is read as a number when `value` is one."""

    tool: str
    arguments: dict[str, Any]
    op: str
    value: Any
    cooldown_seconds: int = 3600

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments, "op": self.op,
                "value": self.value, "cooldown_seconds": self.cooldown_seconds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConditionCheck:
        return cls(data["tool"], dict(data.get("arguments") or {}), data["op"], data["value"],
                   int(data.get("cooldown_seconds", 3600)))


@dataclass(frozen=True)
class Task:
    id: str
    user_id: str
    name: str
    kind: TriggerKind
    timezone: str
    status: TaskStatus
    misfire: Misfire
    grace_seconds: int
    executor: str = "orchestrator"
    action: dict[str, Any] = field(default_factory=dict)
    channel: str | None = None  # named by the person ("on Telegram"): always this one
    # Where the task was set: its messages go there when the person chose no preferred channel.
    origin_channel: str | None = None
    cron: str | None = None
    interval_seconds: int | None = None
    run_at: datetime | None = None
    event_filter: EventFilter | None = None
    condition: ConditionCheck | None = None
    quiet_when_nothing: bool = False
    template: str | None = None
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    last_value: Any = None
    last_held: bool = False
    last_fired_at: datetime | None = None
    created_from: str | None = None
    created_at: datetime | None = None
    resume_status: TaskStatus | None = None

    @property
    def instruction(self) -> str:
        return str(self.action.get("instruction") or self.action.get("text") or "")

    def next_after(self, after: datetime) -> datetime | None:
        """The first scheduled time strictly after `after` (UTC); None when none is left.
        Conditions poll at their interval; events have no schedule."""
        if self.kind is TriggerKind.CRON:
            assert self.cron
            return next_cron_time(parse_cron(self.cron), self.timezone, after)
        if self.kind in (TriggerKind.INTERVAL, TriggerKind.CONDITION):
            assert self.interval_seconds
            step = timedelta(seconds=self.interval_seconds)
            anchor = self.created_at or after
            if after < anchor:
                return anchor
            periods = int((after - anchor) / step) + 1
            return anchor + periods * step
        if self.kind is TriggerKind.ONCE:
            return self.run_at if self.run_at and self.run_at > after else None
        return None

    def is_recurring(self) -> bool:
        return self.kind is not TriggerKind.ONCE
