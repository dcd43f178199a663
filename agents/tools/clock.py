"""Clock tools: the current time in any IANA timezone, and converting a time between zones.

"Now" comes from the call's injectable clock (`ctx.clock`), so tests can pin it. Zone names
are IANA keys ("Europe/Paris"); a wrong-case key is accepted ("europe/paris"), anything else
fails with a message that shows the expected format and the closest known names.
"""

from __future__ import annotations

import difflib
import functools
import re
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import READS, tool


@functools.cache
def _zones_by_lower_name() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}


def resolve_zone(name: str) -> ZoneInfo:
    """The ZoneInfo for an IANA name, or ValueError naming it and suggesting the format."""
    key = name.strip()
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    known = _zones_by_lower_name()
    if key.lower() in known:
        return ZoneInfo(known[key.lower()])
    close = difflib.get_close_matches(key.lower(), list(known), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(known[c] for c in close)}?" if close else ""
    raise ValueError(f"unknown timezone {name!r}: use an IANA timezone name such as "
                     f"'Europe/Paris', 'America/New_York' or 'UTC'.{hint}")


def _offset(dt: datetime) -> str:
    minutes = int(dt.utcoffset().total_seconds() // 60)  # type: ignore[union-attr]
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def describe(dt: datetime) -> str:
    """'Monday 5 January 2026, 04:00 (4:00 AM) EST (UTC-05:00), America/New_York'."""
    twelve = f"{dt.hour % 12 or 12}:{dt.minute:02d} {'AM' if dt.hour < 12 else 'PM'}"
    return (f"{dt:%A} {dt.day} {dt:%B %Y}, {dt:%H:%M} ({twelve}) {dt.tzname()} "
            f"({_offset(dt)}), {dt.tzinfo}")


@tool(safe_to_repeat=True, does=READS)
async def current_time(ctx: ToolExecutionContext, timezone: str | None = None) -> str:
    """Get the current date, time and weekday, in the user's timezone or a given one.

    Args:
        timezone: IANA timezone name such as "Europe/Paris" or "Asia/Tokyo". Omit for the
            user's own timezone.
    """
    zone = resolve_zone(timezone or ctx.timezone)
    now = ctx.clock.now().astimezone(zone).replace(microsecond=0)
    return f"{describe(now)}\nISO 8601: {now.isoformat()}"


_TIME = re.compile(r"(?:(\d{4}-\d{2}-\d{2})[ T]+)?(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?"
                   r"\s*([ap])?\.?(?:m\.?)?", re.IGNORECASE)


def _parse_wall_time(text: str, today: date) -> datetime:
    """A naive (or offset-carrying) datetime from ISO 8601, 'HH:MM', or '3pm' style text."""
    text = text.strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    match = _TIME.fullmatch(text)
    if not match:
        raise ValueError(f"cannot read the time {text!r}: use '15:30', '3:30 pm' or "
                         "'2026-03-10 15:30'")
    day_text, hour_text, minute, second, half = match.groups()
    hour = int(hour_text)
    if half:
        if not 1 <= hour <= 12:
            raise ValueError(f"cannot read the time {text!r}: hour must be 1-12 with am/pm")
        hour = hour % 12 + (12 if half.lower() == "p" else 0)
    day = date.fromisoformat(day_text) if day_text else today
    return datetime(day.year, day.month, day.day, hour, int(minute or 0), int(second or 0))


@tool(safe_to_repeat=True, does=READS)
async def convert_time(ctx: ToolExecutionContext, time: str, to_timezone: str,
                       from_timezone: str | None = None) -> str:
    """Convert a date/time from one timezone to another (handles daylight saving time).

    Args:
        time: The time to convert: "15:30", "3:30 pm", or "2026-03-10 15:30". Without a
            date, today's date in the source timezone is used.
        to_timezone: IANA timezone name to convert to, such as "Asia/Tokyo".
        from_timezone: IANA timezone name the time is in. Omit for the user's own timezone.
    """
    source = resolve_zone(from_timezone or ctx.timezone)
    target = resolve_zone(to_timezone)
    wall = _parse_wall_time(time, ctx.clock.now().astimezone(source).date())
    notes = []
    if wall.tzinfo is None:
        local = wall.replace(tzinfo=source)
        if local.astimezone(UTC).astimezone(source).replace(tzinfo=None) != wall:
            local = local.astimezone(UTC).astimezone(source)
            notes.append(f"Note: {wall:%H:%M} does not exist in {source} on {wall:%Y-%m-%d} "
                         f"(clocks jump forward); read as {local:%H:%M %Z}.")
        elif local.replace(fold=1).utcoffset() != local.utcoffset():
            notes.append(f"Note: {wall:%H:%M} happens twice in {source} on {wall:%Y-%m-%d} "
                         f"(clocks fall back); using the first one ({local:%Z}).")
    else:
        local = wall.astimezone(source)
    converted = local.astimezone(target)
    lines = [describe(local), f"= {describe(converted)}",
             f"ISO 8601: {local.isoformat()} = {converted.isoformat()}", *notes]
    return "\n".join(lines)
