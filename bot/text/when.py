"""Dates and times as people say them, read in the person's timezone: ISO 8601
("2026-03-10T09:00", with or without an offset), and simple phrases: "in 2 hours", "in 30 min",
"in a day", "tomorrow 15:00", "today at 3pm", "tonight", "friday 9am", "next monday at 10:30",
"15:00", "noon". Reminders read their `when` with it, and schedules their one-time phrases."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_UNITS = {"m": "minutes", "min": "minutes", "mins": "minutes", "minute": "minutes",
          "minutes": "minutes", "h": "hours", "hr": "hours", "hrs": "hours", "hour": "hours",
          "hours": "hours", "d": "days", "day": "days", "days": "days", "week": "weeks",
          "weeks": "weeks"}
_RELATIVE = re.compile(r"in\s+(an?|\d+(?:\.\d+)?)\s*([a-z]+)")
_TIME = re.compile(r"(?:at\s+)?(?:(noon|midday|midnight)|(\d{1,2})(?:[:.h](\d{2}))?\s*"
                   r"(am|pm|a\.m\.|p\.m\.)?)")
_DAY_WORDS = r"today|tonight|tomorrow|tmrw|yesterday|(?:next\s+|on\s+|this\s+)?(?:" + \
    "|".join(WEEKDAYS) + ")"
_DAY_FIRST = re.compile(rf"({_DAY_WORDS})(?:\s+(?:at\s+)?(.+))?")
_DAY_LAST = re.compile(rf"(.+?)\s+({_DAY_WORDS})")
UNREADABLE = "I can't read that as a date and time"
DEFAULT_HOURS = {"tonight": 20}
DEFAULT_HOUR = 9


def parse_when(text: str, now: datetime) -> datetime:
    """An aware datetime in `now`'s timezone; ValueError when the text can't be read or the
    time has passed. `now` must be aware (the user's "now")."""
    tz = now.tzinfo
    cleaned = " ".join(text.strip().lower().rstrip(".!").split())
    when = _iso(text.strip(), tz) or _relative(cleaned, now) or _day_and_time(cleaned, now)
    if when is None:
        raise ValueError(UNREADABLE)
    if when <= now:
        raise TimePassed(when)
    return when


class TimePassed(ValueError):
    """The time read has already passed (`when`: for a caller that says it in the person's
    language)."""

    def __init__(self, when: datetime) -> None:
        super().__init__(f"{when:%A} {when.day} {when:%B}, {when:%H:%M} has already passed")
        self.when = when


def _iso(text: str, tz: object) -> datetime | None:
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):  # a date alone: in the morning
            parsed = datetime.combine(date.fromisoformat(text), time(DEFAULT_HOUR))
        else:
            parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return _localize(parsed, tz) if parsed.tzinfo is None else parsed.astimezone(tz)  # type: ignore[arg-type]


def _relative(text: str, now: datetime) -> datetime | None:
    match = _RELATIVE.fullmatch(text)
    if not match or match.group(2) not in _UNITS:
        return None
    amount = 1.0 if match.group(1) in ("a", "an") else float(match.group(1))
    later = now.astimezone(UTC) + timedelta(**{_UNITS[match.group(2)]: amount})
    return later.astimezone(now.tzinfo).replace(microsecond=0)


def _day_and_time(text: str, now: datetime) -> datetime | None:
    """"tomorrow 15:00", "3pm tomorrow", "friday at 9", "tonight", "15:00"."""
    if match := _DAY_FIRST.fullmatch(text):
        day_word, time_part = match.group(1), match.group(2) or ""
    elif match := _DAY_LAST.fullmatch(text):
        time_part, day_word = match.group(1), match.group(2)
    else:
        day_word, time_part = None, text
    clock = _clock(time_part) if time_part else None
    if time_part and clock is None:
        return None
    today = now.date()
    if day_word is None:
        if clock is None:
            return None
        when = _localize(datetime.combine(today, clock), now.tzinfo)
        # A bare time is the next one: 09:00 said at 10:00 means tomorrow.
        return when if when > now else _localize(
            datetime.combine(today + timedelta(days=1), clock), now.tzinfo)
    if clock is None:
        clock = time(DEFAULT_HOURS.get(day_word, DEFAULT_HOUR))
    return _localize(datetime.combine(_resolve_day(day_word, today), clock), now.tzinfo)


def _resolve_day(word: str, today: date) -> date:
    if word in ("today", "tonight"):
        return today
    if word in ("tomorrow", "tmrw"):
        return today + timedelta(days=1)
    if word == "yesterday":  # read, so the user hears "has already passed", not "unreadable"
        return today - timedelta(days=1)
    # A weekday is its next occurrence after today ("friday" said on a Friday: in a week).
    ahead = (WEEKDAYS.index(word.split()[-1]) - today.weekday()) % 7 or 7
    return today + timedelta(days=ahead)


def _clock(text: str) -> time | None:
    match = _TIME.fullmatch(text.strip())
    if not match:
        return None
    special, hour_text, minute_text, half = match.groups()
    if special:
        return time(0) if special == "midnight" else time(12)
    hour, minute = int(hour_text), int(minute_text or 0)
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _localize(naive: datetime, tz: object) -> datetime:
    """The wall time in `tz`; a time skipped by a DST jump moves forward past the gap."""
    aware = naive.replace(tzinfo=tz)  # type: ignore[arg-type]
    return aware.astimezone(UTC).astimezone(tz)  # type: ignore[arg-type]
