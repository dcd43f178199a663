"""Reminders: an agent that drafts one (what + when, in the user's timezone), stores it in the
`reminders` table and, when its status is `pending`, schedules it with the trigger engine (a
one-time task with the `reminder` executor: its text is sent then, with no LLM call).

`when` is read in the user's timezone: ISO 8601 ("2026-03-10T09:00", with or without an
offset), and simple phrases: "in 2 hours", "in 30 min", "in a day", "tomorrow 15:00",
"today at 3pm", "tonight", "friday 9am", "next monday at 10:30", "15:00", "noon". Anything else
(or a time already past) is asked again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from agents.base import AgentResult, InputField, StandardAgent
from bot.db import Database
from bot.tools import ToolExecutionContext, tool

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
        raise ValueError(f"{when:%A} {when.day} {when:%B}, {when:%H:%M} has already passed")
    return when


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


@dataclass(frozen=True)
class _Owner:
    """Who a scheduled reminder is for (the trigger service's Owner, by shape: agents do not
    import triggers)."""

    user_id: str
    timezone: str
    created_from: str | None = None


@dataclass(frozen=True)
class Reminder:
    id: int
    text: str
    due_at: datetime
    timezone: str
    status: str


class ReminderStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, user_id: str, text: str, due_at: datetime, timezone: str, *,
                  status: str, source_text: str, at: datetime) -> Reminder:
        reminder_id = await self.db.fetchval(
            "INSERT INTO reminders (user_id, text, due_at, timezone, status, source_text,"
            " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            user_id, text, due_at.astimezone(UTC), timezone, status, source_text, at)
        return Reminder(int(reminder_id), text, due_at, timezone, status)

    async def upcoming(self, user_id: str, limit: int = 20) -> list[Reminder]:
        rows = await self.db.fetch(
            "SELECT id, text, due_at, timezone, status FROM reminders WHERE user_id = $1"
            " AND status IN ('draft', 'pending') ORDER BY due_at LIMIT $2", user_id, limit)
        return [Reminder(**r) for r in rows]


def reminders_of(ctx: ToolExecutionContext) -> ReminderStore:
    stores = ctx.stores
    if stores is None or not hasattr(stores, "reminders"):
        raise RuntimeError("reminders are not available (no database configured for tools)")
    return stores.reminders


def describe(when: datetime) -> str:
    return f"{when:%A} {when.day} {when:%B %Y} at {when:%H:%M} ({when.tzinfo})"


class ReminderDraftAgent(StandardAgent):
    """Set up a reminder for the user: what to remind them about and when."""

    label = "reminder"

    what = InputField(str, "What to remind the user about, e.g. \"call mom\"",
                      prompt="What should I remind you about?")
    when = InputField(
        str, "When to remind them, as the user said it or in ISO 8601, in the user's timezone",
        prompt="When should I remind you? (e.g. “tomorrow 15:00” or “in 2 hours”)",
        validator_description="a future date/time such as 'tomorrow 15:00', 'in 2 hours', "
                              "'friday 9am' or '2026-03-10T09:00'")

    def clean_when(self, value: str) -> str:
        """The time as ISO 8601 in the user's timezone (ValueError: ask again)."""
        return parse_when(value, self.context.now()).isoformat()

    def question_for(self, spec: InputField, problem: str | None = None,
                     given: object = None) -> str:
        if spec.name == "when" and problem == UNREADABLE:
            return (f"Sorry, I can't read “{given}” as a date and time. When should I remind "
                    "you? (e.g. “tomorrow 15:00”, “in 2 hours” or “friday 9am”)")
        if spec.name == "when" and problem:
            return f"Sorry, {problem}. When should I remind you?"
        return super().question_for(spec, problem, given)

    async def on_running(self) -> AgentResult:
        due = datetime.fromisoformat(self.when).astimezone(self.context.tz)
        status = str(self.settings.get("status", "pending"))
        reminder = await reminders_of(self.context).add(
            self.context.user_id, self.what, due, self.context.timezone, status=status,
            source_text=self.task_instruction, at=self.context.clock.now())
        scheduler = self.context.services.get("triggers")
        if status != "pending" or scheduler is None:
            return self.make_result(
                f"Saved reminder #{reminder.id}: “{self.what}” on {describe(due)} as a draft "
                f"(status {status}): it will not be sent until it is scheduled.",
                id=reminder.id, due=due.isoformat())
        task = await scheduler.remind(_Owner(self.context.user_id, self.context.timezone,
                                             f"reminder:{reminder.id}"), self.what, due)
        return self.make_result(
            f"Saved reminder #{reminder.id} and scheduled it (task {task.id}): “{self.what}” on "
            f"{describe(due)}. It will be sent to the user then.",
            id=reminder.id, due=due.isoformat(), task_id=task.id)


@tool(progress="checking your reminders", safe_to_repeat=True)
async def list_reminders(ctx: ToolExecutionContext) -> str:
    """List the user's upcoming reminders (saved, not yet delivered)."""
    found = await reminders_of(ctx).upcoming(ctx.user_id)
    if not found:
        return "The user has no upcoming reminders."
    return "\n".join(f"#{r.id} {describe(r.due_at.astimezone(ZoneInfo(r.timezone)))}: "
                     f"{r.text} ({r.status})" for r in found)
