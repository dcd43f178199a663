"""Five-field cron in a person's timezone, parsed here rather than by APScheduler.

`CronTrigger.from_crontab` reads day-of-week 0 as Monday; cron (and every person who copies a
crontab line) means Sunday. So the fields are parsed here (0 and 7 are Sunday, names allowed)
and the next run is computed on wall time in the task's IANA zone:

- a wall time skipped by spring-forward (02:30 on the change day) runs just after the gap
  (03:30 local): the run is late, never lost;
- a wall time repeated by fall-back (01:30 twice) runs once, at its first occurrence: every
  wall time is produced once, and the run key (task, UTC time) stops any second fire.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
               "dec")
SEARCH_DAYS = 366 * 5  # "30 2 31 2 *" never matches: give up after five years


class CronError(ValueError):
    """A cron expression that cannot be read; the message says which field and why."""


@dataclass(frozen=True)
class CronSpec:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday ... 6 = Saturday
    days_restricted: bool
    weekdays_restricted: bool
    text: str

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow  # cron's rule: either restriction admits the day
        return dom and dow


def parse_cron(text: str) -> CronSpec:
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"a cron expression has 5 fields (minute hour day month weekday); "
                        f"{text!r} has {len(fields)}")
    minute, hour, day, month, weekday = fields
    weekdays = _field(weekday, 0, 7, "weekday", DAY_NAMES)
    return CronSpec(
        minutes=_field(minute, 0, 59, "minute"), hours=_field(hour, 0, 23, "hour"),
        days=_field(day, 1, 31, "day of month"),
        months=_field(month, 1, 12, "month", MONTH_NAMES, first=1),
        weekdays=frozenset(d % 7 for d in weekdays),  # 7 is Sunday too
        days_restricted=day != "*", weekdays_restricted=weekday != "*", text=" ".join(fields))


def _field(text: str, low: int, high: int, name: str, names: tuple[str, ...] = (),
           first: int = 0) -> frozenset[int]:
    values: set[int] = set()
    for part in text.lower().split(","):
        span, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if span == "*":
                start, end = low, high
            elif "-" in span:
                a, b = span.split("-", 1)
                start, end = _value(a, names, first), _value(b, names, first)
            else:
                start = _value(span, names, first)
                end = high if step_text else start
        except ValueError as err:
            raise CronError(f"cron {name} field {text!r}: {err}") from None
        if step < 1 or not (low <= start <= high and low <= end <= high) or start > end:
            raise CronError(f"cron {name} field {text!r}: values must lie in {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, names: tuple[str, ...], first: int) -> int:
    if text[:3] in names and text.isalpha():
        return names.index(text[:3]) + first
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a number" + (" or a name" if names else ""))
    return int(text)


def next_cron_time(spec: CronSpec, zone: str, after: datetime) -> datetime | None:
    """The first run strictly after `after` (aware), in UTC; None if there is none."""
    tz = ZoneInfo(zone)
    local = after.astimezone(tz)
    start_wall = local.replace(tzinfo=None, second=0, microsecond=0)
    day = start_wall.date()
    hours, minutes = sorted(spec.hours), sorted(spec.minutes)
    for _ in range(SEARCH_DAYS):
        if spec.day_matches(day):
            for hour in hours:
                for minute in minutes:
                    wall = datetime.combine(day, time(hour, minute))
                    if wall < start_wall:
                        continue
                    at = wall_to_utc(wall, tz)
                    if at > after:
                        return at
        day += timedelta(days=1)
    return None


def wall_to_utc(wall: datetime, tz: ZoneInfo) -> datetime:
    """A naive wall time in `tz` as UTC: the first of a repeated time, and a skipped time
    moved past the gap (fold=0 reads it with the offset before the change)."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC)


# --- in words, for people (triggers.schedule_words) -------------------------------------------

def at_one_time(spec: CronSpec) -> bool:
    """The schedule runs at one time of day (`describe_cron` says it)."""
    return len(spec.hours) == 1 and len(spec.minutes) == 1 and not spec.days_restricted and \
        len(spec.months) == 12
