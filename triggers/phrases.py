"""Schedules as people say them: "every day at 7:30", "weekdays at 7:30", "every sunday
9am", "every 2 hours", "tomorrow at 3pm" (once), or a 5-field cron line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time

from bot.text.when import parse_when
from triggers.cron import CronError, parse_cron

DAYS = {"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5,
        "saturday": 6}
_TIME = re.compile(r"(?:at\s+)?(\d{1,2})(?:[:.h](\d{2}))?\s*(am|pm)?$")
_EVERY_N = re.compile(r"every\s+(\d+|an?|)\s*(minutes?|mins?|hours?|hrs?|h)$")


class ScheduleError(ValueError):
    """A schedule that cannot be read; the message suggests what can."""


@dataclass(frozen=True)
class Schedule:
    cron: str | None = None
    interval_seconds: int | None = None
    run_at: datetime | None = None  # once (UTC)


HELP = ("say it like “every day at 7:30”, “weekdays at 8am”, “every sunday at 18:00”, "
        "“every 2 hours”, “tomorrow at 3pm”, or give a cron line such as “30 7 * * 1-5”")


def parse_schedule(text: str, now_local: datetime) -> Schedule:
    """`now_local` is aware, in the person's timezone (one-time phrases are read in it)."""
    cleaned = " ".join(text.strip().lower().rstrip(".!").split())
    if re.fullmatch(r"[\d*/,\-a-z]+( [\d*/,\-a-z]+){4}", cleaned) and cleaned[0] in "0123456789*":
        try:
            parse_cron(cleaned)
        except CronError as err:
            raise ScheduleError(str(err)) from None
        return Schedule(cron=cleaned)
    if match := _EVERY_N.fullmatch(cleaned):
        count = 1 if match.group(1) in ("", "a", "an") else int(match.group(1))
        unit = 60 if match.group(2).startswith("m") else 3600
        if count < 1:
            raise ScheduleError("the interval must be at least one minute")
        return Schedule(interval_seconds=count * unit)
    recurring = _recurring(cleaned)
    if recurring is not None:
        return Schedule(cron=recurring)
    try:
        return Schedule(run_at=parse_when(text, now_local))
    except ValueError as err:
        raise ScheduleError(f"I can't read “{text}” as a schedule ({err}); {HELP}") from None


def _recurring(text: str) -> str | None:
    words = re.sub(r"^(every|each)\s+", "", text)
    words = re.sub(r"\b(mornings?|evenings?)\b", "", words).strip()
    days: str | None = None
    for phrase, cron_days in (("day", "*"), ("daily", "*"), ("weekday", "1-5"),
                              ("weekdays", "1-5"), ("weekend", "0,6"), ("weekends", "0,6")):
        if words == phrase or words.startswith(phrase + " "):
            days, words = cron_days, words[len(phrase):].strip()
            break
    else:
        named = re.match(r"((?:(?:sun|mon|tues|wednes|thurs|fri|satur)days?(?:,|\s+and|\s)*)+)",
                         words)
        if named and (text.startswith(("every", "each")) or named.group(1).strip()
                      .endswith("days")):
            names = re.findall(r"(sun|mon|tues|wednes|thurs|fri|satur)day", named.group(1))
            days = ",".join(str(DAYS[n + "day"]) for n in names)
            words = words[named.end():].strip()
    if days is None:
        return None
    at = _time_of_day(words or "9:00")
    if at is None:
        return None
    return f"{at.minute} {at.hour} * * {days}"


def _time_of_day(text: str) -> time | None:
    match = _TIME.fullmatch(text.strip())
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    if match.group(3):
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if match.group(3) == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)
