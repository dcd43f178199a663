"""A task's schedule in words, for every kind Valet runs (triggers/schedule_words.py): the
days and times of a cron line, an interval, a condition's check, events, once; and a task's
state in /tasks. {days}, {months}, {time}, {minutes} are lists the reader's locale writes
("Mondays and Thursdays", "lunes y jueves"; the names are Babel's)."""

from __future__ import annotations

from persona.line_group import LineGroup


class ScheduleWordLines(LineGroup):
    """The days a schedule runs ({days}) and how often in the day ({often})."""

    when_days_at: str = "{days} at {time}"
    when_monthdays_at: str = "on day {days} of the month at {time}"
    when_in_months: str = "{schedule}, in {months}"
    when_on_weekdays: str = "on weekdays"
    when_on_weekends: str = "at weekends"
    when_on_days: str = "on {days}"
    when_on_monthdays: str = "on day {days} of the month"
    when_often_on: str = "{often}, {days}"
    when_every_minute: str = "every minute"
    when_every_minutes: str = "every {count} minutes"
    when_every_hour: str = "every hour"
    when_every_hours: str = "every {count} hours"
    when_every_hour_at: str = "every hour at minute {minutes}"
    when_between: str = "{often} between {start} and {end}"
    # A cron line no sentence says well (a day of the month or a weekday, cron's either-or).
    when_cron: str = "on the schedule “{cron}”"
    # A condition: a tool's result compared ({op}: ==, >...; "contains": when_contains).
    when_condition: str = "when {tool} {op} {value} (checked {often})"
    when_contains: str = "contains"
    when_event: str = "on {source}/{type} events{fields}"
    when_once: str = "once"
    # A task's state in /tasks, when it is not active.
    state_paused: str = "paused"
    state_disabled: str = "switched off"
    state_completed: str = "done"
    state_pending_approval: str = "waiting for your OK"
    state_expired: str = "expired"
