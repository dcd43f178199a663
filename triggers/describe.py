"""Tasks in words, in the person's timezone: "weekdays at 7:30, next tomorrow"."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from persona.catalog import say
from persona.lines import ScheduleLines, fill
from persona.spoken import spoken_when
from triggers.cron import at_one_time, describe_cron, parse_cron
from triggers.model import Task, TaskStatus, TriggerKind


def when_in_words(at: datetime, now: datetime, zone: str, *, with_time: bool = True) -> str:
    """In the listener's language and locale (persona.spoken): "tomorrow at 7:30",
    "mañana a las 7:30"."""
    tz = ZoneInfo(zone)
    return spoken_when(at.astimezone(tz), now.astimezone(tz), with_time=with_time)


def schedule_in_words(task: Task) -> str:
    if task.kind is TriggerKind.CRON and task.cron:
        return describe_cron(parse_cron(task.cron))
    if task.kind in (TriggerKind.INTERVAL, TriggerKind.CONDITION) and task.interval_seconds:
        step = timedelta(seconds=task.interval_seconds)
        every = f"{task.interval_seconds // 3600} h" if step.seconds % 3600 == 0 and \
            task.interval_seconds >= 3600 else f"{task.interval_seconds // 60} min"
        if task.kind is TriggerKind.CONDITION and task.condition:
            c = task.condition
            return f"when {c.tool} {c.op} {c.value!r} (checked every {every})"
        return f"every {every}"
    if task.kind is TriggerKind.EVENT and task.event_filter:
        f = task.event_filter
        extra = "".join(f", {k}={v}" for k, v in f.fields.items())
        return f"on {f.source}/{f.type} events{extra}"
    return "once"


def task_line(task: Task, now: datetime) -> str:
    what = schedule_in_words(task)
    if task.status is TaskStatus.ACTIVE and task.next_run_at and task.kind is not \
            TriggerKind.CONDITION:
        same_time = task.kind is TriggerKind.CRON and task.cron is not None and \
            at_one_time(parse_cron(task.cron))
        nxt = when_in_words(task.next_run_at, now, task.timezone, with_time=not same_time)
        what = f"{nxt}" if task.kind is TriggerKind.ONCE else \
            say("when_next", schedule=what, when=nxt)
    state = "" if task.status is TaskStatus.ACTIVE else f" [{task.status.value}]"
    return f"{task.id}: {task.name} — {what}{state}"


def tasks_text(tasks: list[Task], now: datetime, lines: ScheduleLines) -> str:
    if not tasks:
        return lines.schedule_none
    return fill(lines.schedule_listing, tasks="\n".join(task_line(t, now) for t in tasks))
