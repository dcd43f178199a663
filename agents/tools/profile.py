"""The user's own settings, changed by saying so: name, timezone, quiet hours, preferred
channel, language."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agents.services import services_of
from agents.tools.clock import resolve_zone
from bot.contracts.channels import names
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import CHANGES, tool
from persona.catalog import ENGLISH_NAMES, LANGUAGES, language_named

if TYPE_CHECKING:
    from bot.people.users import UserStore

_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def _users(ctx: ToolExecutionContext) -> UserStore:
    return services_of(ctx).users


MAX_NAME = 60


@tool(progress="noting your name", does=CHANGES)
async def set_my_name(ctx: ToolExecutionContext, name: str) -> str:
    """Set the name the user goes by ("call me Sam", "I'm Sam Ortiz"): Valet signs messages it
    sends to other people for them with it.

    Args:
        name: The name as they want it shown, e.g. "Sam".
    """
    clean = " ".join(name.split())
    if not clean or len(clean) > MAX_NAME:
        raise ValueError(f"give a name of 1 to {MAX_NAME} characters")
    await _users(ctx).set_display_name(ctx.user_id, clean)
    return f"Name set: {clean}."


@tool(progress="updating your timezone", does=CHANGES)
async def set_my_timezone(ctx: ToolExecutionContext, timezone: str) -> str:
    """Set the user's timezone when they say where they are or which zone they are in
    ("I'm in Lisbon now", "use Pacific time"). Every time and reminder uses it from then on.

    Args:
        timezone: An IANA timezone name, e.g. "Europe/Lisbon" or "America/Los_Angeles".
    """
    zone = resolve_zone(timezone)
    await _users(ctx).set_timezone(ctx.user_id, zone.key)
    now = ctx.clock.now().astimezone(zone)
    return f"Timezone set to {zone.key}; it is {now:%H:%M} there now."


def _hhmm(value: str) -> str:
    match = _HHMM.match(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not a time like 22:00")
    return f"{int(match.group(1)):02d}:{match.group(2)}"


@tool(progress="updating your quiet hours", does=CHANGES)
async def set_quiet_hours(ctx: ToolExecutionContext, start: str | None = None,
                          end: str | None = None) -> str:
    """Set (or clear, with no times) the hours when Valet sends no proactive messages, in the
    user's timezone. Replies to their own messages are not affected.

    Args:
        start: When quiet time begins, "HH:MM" (24-hour), e.g. "22:00".
        end: When it ends, "HH:MM", e.g. "07:00".
    """
    if not start and not end:
        await _users(ctx).set_quiet_hours(ctx.user_id, None, None)
        return "Quiet hours cleared."
    if not (start and end):
        raise ValueError("give both a start and an end time, or neither to clear them")
    first, last = _hhmm(start), _hhmm(end)
    await _users(ctx).set_quiet_hours(ctx.user_id, first, last)
    return f"Quiet hours set: {first}-{last} ({ctx.timezone})."


@tool(progress="updating where I reach you", does=CHANGES)
async def set_preferred_channel(ctx: ToolExecutionContext, channel: str) -> str:
    """Set where proactive messages (reminders, summaries) reach the user.

    Args:
        channel: "telegram", "sms" or "console".
    """
    known = names(services_of(ctx).channels)
    if channel not in known:
        raise ValueError(f"unknown channel {channel!r}; one of {', '.join(known)}")
    await _users(ctx).set_preferred_channel(ctx.user_id, channel)
    return f"I'll reach you on {channel} for reminders and summaries."


@tool(progress="changing your language", does=CHANGES)
async def set_my_language(ctx: ToolExecutionContext, language: str) -> str:
    """Set the language Valet writes to the user in, when they ask for one ("write to me in
    Spanish", "háblame en español"): your answers, reminders, cards and notices from then on.

    Args:
        language: The language: en, es, fr, de or pt (or its name, e.g. "Spanish").
    """
    code = language_named(language)
    if code is None:
        raise ValueError(f"{language!r} is not a language Valet writes: {', '.join(LANGUAGES)}")
    await _users(ctx).set_language(ctx.user_id, code, ctx.clock.now())
    return (f"Language set to {ENGLISH_NAMES[code]} ({code}): write to the user in "
            f"{ENGLISH_NAMES[code]} from now on.")
