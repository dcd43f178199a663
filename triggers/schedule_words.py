"""A schedule in words, in the listener's language and locale (persona.speaking), for every
kind of task Valet runs: a cron line ("weekdays at 7:30", "los lunes y jueves a las 9:00",
"alle 30 Minuten zwischen 8:00 und 18:59, werktags"), an interval, a condition's check,
events, once. The sentences are catalog lines (persona/lines_schedules.py); day and month
names and the lists' "and" are Babel's (CLDR), in the reader's locale."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from babel.dates import get_day_names, get_month_names
from babel.lists import format_list

from persona.catalog import SOURCE, say
from persona.speaking import listener_language
from persona.spoken import locale, spoken_number, spoken_time
from triggers.cron import CronSpec
from triggers.model import ConditionCheck, EventFilter

MOST_TIMES = 4  # a day's times said one by one ("at 9:00 and 18:00"); more: how often
WEEKDAYS, WEEKENDS = frozenset({1, 2, 3, 4, 5}), frozenset({0, 6})


def listed(items: Iterable[str]) -> str:
    """"a, b and c" as the listener's locale joins a list."""
    return format_list(list(items), locale=locale())


def _time(hour: int, minute: int) -> str:
    return spoken_time(datetime(2000, 1, 1, hour, minute))


def _plural(name: str) -> str:
    """A weekday named as a habit: "Mondays", "montags", "lunes", "lundis",
    "segundas-feiras"."""
    language = listener_language() or SOURCE
    if language == "de":
        return name.lower() + "s"
    return "-".join(part if part.endswith("s") else part + "s" for part in name.split("-"))


def _weekdays(days: frozenset[int]) -> str:
    """Cron's weekdays (0: Sunday), Monday first, as the listener names them."""
    names = get_day_names("wide", locale=locale())  # Babel's: 0 is Monday
    return listed(_plural(names[(day - 1) % 7]) for day in sorted(days, key=lambda d: (d - 1) % 7))


def _monthdays(spec: CronSpec) -> str:
    return listed(str(day) for day in sorted(spec.days))


def describe_cron(spec: CronSpec) -> str:
    """"weekdays at 7:30", "every day at 18:00", "Sundays at 9:00", "every 30 minutes between
    8:00 and 18:59, on weekdays", "on day 1 of the month at 9:00, in March"; a cron line no
    sentence says well is quoted (when_cron)."""
    if spec.days_restricted and spec.weekdays_restricted:  # cron's either-or of the two
        return say("when_cron", cron=spec.text)
    times = sorted((hour, minute) for hour in spec.hours for minute in spec.minutes)
    if len(times) <= MOST_TIMES:
        said = _days_at(spec, listed(_time(hour, minute) for hour, minute in times))
    else:
        often = _often(spec)
        if often is None:
            return say("when_cron", cron=spec.text)
        days = _days(spec)
        said = say("when_often_on", often=often, days=days) if days else often
    if len(spec.months) < 12:
        names = get_month_names("wide", locale=locale())
        said = say("when_in_months", schedule=said,
                   months=listed(names[month] for month in sorted(spec.months)))
    return said


def _days_at(spec: CronSpec, time: str) -> str:
    if spec.days_restricted:
        return say("when_monthdays_at", days=_monthdays(spec), time=time)
    days = spec.weekdays
    if not spec.weekdays_restricted or len(days) == 7:
        return say("when_every_day", time=time)
    if days == WEEKDAYS:
        return say("when_weekdays", time=time)
    if days == WEEKENDS:
        return say("when_weekends", time=time)
    return say("when_days_at", days=_weekdays(days), time=time)


def _days(spec: CronSpec) -> str:
    """The days of a schedule that runs often in the day ("": every day)."""
    if spec.days_restricted:
        return say("when_on_monthdays", days=_monthdays(spec))
    days = spec.weekdays
    if not spec.weekdays_restricted or len(days) == 7:
        return ""
    if days == WEEKDAYS:
        return say("when_on_weekdays")
    if days == WEEKENDS:
        return say("when_on_weekends")
    return say("when_on_days", days=_weekdays(days))


def _step(values: list[int], span: int) -> int | None:
    """The step of values spread evenly from 0 over `span` ("*/15": 15); None otherwise."""
    if len(values) < 2 or values[0] != 0:
        return None
    step = values[1] - values[0]
    return step if span % step == 0 and values == list(range(0, span, step)) else None


def _often(spec: CronSpec) -> str | None:
    """How often a schedule runs within its hours ("every 30 minutes between 8:00 and 18:59",
    "every 2 hours"); None when no sentence says it."""
    minutes, hours = sorted(spec.minutes), sorted(spec.hours)
    if minutes == [0] and (step := _step(hours, 24)) is not None:
        return say("when_every_hours", count=str(step))
    if len(minutes) == 60:
        often = say("when_every_minute")
    elif minutes == [0]:
        often = say("when_every_hour")
    elif (step := _step(minutes, 60)) is not None:
        often = say("when_every_minutes", count=str(step))
    else:
        often = say("when_every_hour_at", minutes=listed(f"{m:02d}" for m in minutes))
    if len(hours) == 24:
        return often
    if hours == list(range(hours[0], hours[-1] + 1)):
        return say("when_between", often=often, start=_time(hours[0], 0),
                   end=_time(hours[-1], 59))
    return None


def every_seconds(seconds: int) -> str:
    """An interval: "every 2 hours", "every 30 minutes", "every hour"."""
    if seconds >= 3600 and seconds % 3600 == 0:
        hours = seconds // 3600
        return say("when_every_hour") if hours == 1 else \
            say("when_every_hours", count=spoken_number(hours))
    minutes = max(1, seconds // 60)
    return say("when_every_minute") if minutes == 1 else \
        say("when_every_minutes", count=spoken_number(minutes))


def condition_words(check: ConditionCheck, seconds: int) -> str:
    op = say("when_contains") if check.op == "contains" else check.op
    return say("when_condition", tool=check.tool, op=op, value=repr(check.value),
               often=every_seconds(seconds))


def event_words(events: EventFilter) -> str:
    fields = "".join(f", {key}={value}" for key, value in events.fields.items())
    return say("when_event", source=events.source, type=events.type, fields=fields)

