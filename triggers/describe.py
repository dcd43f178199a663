"""Tasks in words, in the person's timezone: "weekdays at 7:30, next tomorrow"."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from persona.catalog import say
from persona.lines import ScheduleLines, fill
from persona.spoken import spoken_when
from triggers.cron import at_one_time, parse_cron
from triggers.model import Task, TaskStatus, TriggerKind
from triggers.schedule_words import condition_words, describe_cron, event_words, every_seconds


def when_in_words(at: datetime, now: datetime, zone: str, *, with_time: bool = True) -> str:
    """In the listener's language and locale (persona.spoken): "tomorrow at 7:30",
    "mañana a las 7:30"."""
    tz = ZoneInfo(zone)
    return spoken_when(at.astimezone(tz), now.astimezone(tz), with_time=with_time)


def schedule_in_words(task: Task) -> str:
    """The task's schedule in the listener's language (triggers.schedule_words)."""
    if task.kind is TriggerKind.CRON and task.cron:
        return describe_cron(parse_cron(task.cron))
    if task.kind is TriggerKind.CONDITION and task.condition and task.interval_seconds:
        return condition_words(task.condition, task.interval_seconds)
    if task.kind is TriggerKind.INTERVAL and task.interval_seconds:
        return every_seconds(task.interval_seconds)
    if task.kind is TriggerKind.EVENT and task.event_filter:
        return event_words(task.event_filter)
    return say("when_once")


# A task's state in /tasks (an active task says none).
_STATES = {TaskStatus.PAUSED: "state_paused", TaskStatus.DISABLED: "state_disabled",
           TaskStatus.COMPLETED: "state_completed",
           TaskStatus.PENDING_APPROVAL: "state_pending_approval",
           TaskStatus.EXPIRED: "state_expired"}


def task_line(task: Task, now: datetime) -> str:
    what = schedule_in_words(task)
    if task.status is TaskStatus.ACTIVE and task.next_run_at and task.kind is not \
            TriggerKind.CONDITION:
        same_time = task.kind is TriggerKind.CRON and task.cron is not None and \
            at_one_time(parse_cron(task.cron))
        nxt = when_in_words(task.next_run_at, now, task.timezone, with_time=not same_time)
        what = f"{nxt}" if task.kind is TriggerKind.ONCE else \
            say("when_next", schedule=what, when=nxt)
    state = f" [{say(_STATES[task.status])}]" if task.status in _STATES else ""
    return f"{task.id}: {task.name} — {what}{state}"


def tasks_text(tasks: list[Task], now: datetime, lines: ScheduleLines) -> str:
    if not tasks:
        return lines.schedule_none
    return fill(lines.schedule_listing, tasks="\n".join(task_line(t, now) for t in tasks))
