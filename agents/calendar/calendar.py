"""Calendar tools: read the person's events (any source), change them on CalDAV. Writing
tools need approval (agents/registry.yaml) and check before asking: the calendar can be
written, the times read in the person's timezone (pinned as their local time, so the card
shows what will be written), the event to move or cancel exists (its real title pinned). The
approval shows the title, the time and the attendees; an approved change that cannot be made
is refused, an error failed (bot.tools.registry.ToolOutcome)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

from agents.calendar import sources
from agents.calendar.sources import (
    SERVICE,
    CalendarAccount,
    CalendarError,
    Declined,
    read_events,
)
from agents.connected import NotConnected, connected_secret, connected_status
from bot.contracts.tool_context import ToolExecutionContext
from bot.text.untrusted import quote_untrusted
from bot.text.when import parse_when
from bot.tools.capabilities import CapabilityStatus
from bot.tools.registry import CHANGES, READS, ToolOutcome, tool
from persona.catalog import say
from persona.spoken import card_moment, card_time

NEXT_EVENT_HORIZON = timedelta(days=30)
MAX_RANGE_DAYS = 62

EVENTS_NOTE = ("the calendar's events as their organisers and feeds wrote them (titles, places, "
               "attendees)")


async def _account(ctx: ToolExecutionContext) -> CalendarAccount:
    try:
        secret = await connected_secret(ctx, SERVICE, what="calendar")
    except NotConnected as err:
        raise CalendarError(str(err)) from None
    return CalendarAccount.from_secret(secret)


def _day(value: str, ctx: ToolExecutionContext) -> date:
    today = ctx.now().date()
    words = {"today": today, "tomorrow": today + timedelta(days=1),
             "yesterday": today - timedelta(days=1)}
    if value.strip().lower() in words:
        return words[value.strip().lower()]
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a day: use today, tomorrow or YYYY-MM-DD") from None


def _when(value: str, ctx: ToolExecutionContext) -> datetime:
    """A time the person gave: local to them unless it carries an offset."""
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a time: use YYYY-MM-DDTHH:MM") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=ctx.tz)


async def _events_text(ctx: ToolExecutionContext, start: datetime, end: datetime,
                       empty: str) -> str:
    try:
        account = await _account(ctx)
        events = await read_events(account, start, end, ctx.tz, ctx.session())
    except CalendarError as err:
        return f"Error: {err}"
    if not events:
        return empty
    # Titles, places and attendees are written by whoever sent the invitation or runs the
    # feed: the model reads them as data.
    return quote_untrusted("\n".join(e.line(ctx.tz) for e in events), note=EVENTS_NOTE)


@tool(progress="checking your calendar", safe_to_repeat=True, does=READS)
async def list_events(ctx: ToolExecutionContext, day: str = "today",
                      until: str | None = None) -> str:
    """The user's calendar events on a day, or from `day` through `until`.

    Args:
        day: today, tomorrow or YYYY-MM-DD.
        until: Last day of a range, YYYY-MM-DD (inclusive).
    """
    first = _day(day, ctx)
    last = _day(until, ctx) if until else first
    if last < first or (last - first).days > MAX_RANGE_DAYS:
        raise ValueError(f"give a range of 0 to {MAX_RANGE_DAYS} days, `until` after `day`")
    start = datetime.combine(first, time(0), tzinfo=ctx.tz)
    end = datetime.combine(last + timedelta(days=1), time(0), tzinfo=ctx.tz)
    return await _events_text(ctx, start, end, "No events.")


@tool(progress="checking your calendar", safe_to_repeat=True, does=READS)
async def next_event(ctx: ToolExecutionContext) -> str:
    """The user's next calendar event (or the one in progress)."""
    now = ctx.now()
    try:
        events = await read_events(await _account(ctx), now, now + NEXT_EVENT_HORIZON,
                                   ctx.tz, ctx.session())
    except CalendarError as err:
        return f"Error: {err}"
    upcoming = [e for e in events if not e.all_day]
    if not upcoming:
        return "Nothing in the next 30 days."
    return quote_untrusted(upcoming[0].line(ctx.tz), note=EVENTS_NOTE)


# --- the checks before asking: the card shows a time that was read, on a calendar that takes it

READ_ONLY = ("this calendar is a read-only subscription (ICS): events cannot be added, moved "
             "or cancelled from here")


async def _writable(ctx: ToolExecutionContext) -> CalendarAccount:
    """The person's calendar, if Valet may change it; ValueError (a check's refusal) says
    why not."""
    try:
        account = await _account(ctx)
    except CalendarError as err:
        raise ValueError(f"{err}. The user was not asked.") from None
    if not account.writable:
        raise ValueError(f"{READ_ONLY}. Nothing was changed and the user was not asked; tell "
                         "them.")
    return account


def _time(value: str, ctx: ToolExecutionContext) -> datetime:
    """A time as the model gave it (YYYY-MM-DDTHH:MM) or as people say it ("tomorrow 13:00"),
    in the person's timezone."""
    try:
        return _when(value, ctx)
    except ValueError:
        pass
    try:
        return parse_when(value, ctx.now())
    except ValueError as err:
        raise ValueError(f"{value!r}: {err}. Give the time as YYYY-MM-DDTHH:MM in the user's "
                         f"time ({ctx.timezone}).") from None


def _span(arguments: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
    """Start and end read in the person's zone and pinned as their local times: the card
    shows, and the approved call uses, exactly these."""
    first = _time(str(arguments["start"]), ctx)
    last = _time(str(arguments["end"]), ctx) if arguments.get("end") \
        else first + timedelta(hours=1)
    if last <= first:
        raise ValueError("the end must be after the start")
    local = "%Y-%m-%dT%H:%M"
    return {**arguments, "start": first.astimezone(ctx.tz).strftime(local),
            "end": last.astimezone(ctx.tz).strftime(local)}


async def check_create(arguments: dict[str, Any], ctx: ToolExecutionContext
                       ) -> dict[str, Any]:
    await _writable(ctx)
    return _span(arguments, ctx)


async def _event_title(ctx: ToolExecutionContext, account: CalendarAccount, event_id: str,
                       *, moving: bool) -> str:
    try:
        title, recurring = await sources.find_event(account, event_id)
    except CalendarError as err:
        raise ValueError(f"{err}. The user was not asked.") from None
    if moving and recurring:
        raise ValueError("that is a recurring event: moving one occurrence is not supported "
                         "yet; the user can change it in their calendar app. They were not "
                         "asked.")
    return title


async def check_move(arguments: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
    account = await _writable(ctx)
    span = _span(arguments, ctx)
    title = await _event_title(ctx, account, str(arguments["event_id"]), moving=True)
    return {**span, "title": title or arguments.get("title")}


async def check_cancel(arguments: dict[str, Any], ctx: ToolExecutionContext
                       ) -> dict[str, Any]:
    account = await _writable(ctx)
    title = await _event_title(ctx, account, str(arguments["event_id"]), moving=False)
    return {**arguments, "title": title or arguments.get("title")}


# --- the tools that change the calendar (each approved first; agents/registry.yaml) ---------

@tool(progress="adding to your calendar", prepare=check_create, does=CHANGES)
async def create_event(ctx: ToolExecutionContext, title: str, start: str,
                       end: str | None = None, attendees: list[str] | None = None,
                       location: str = "") -> ToolOutcome:
    """Add an event to the user's calendar.

    Args:
        title: What it is.
        start: YYYY-MM-DDTHH:MM in the user's time.
        end: YYYY-MM-DDTHH:MM (default: one hour after start).
        attendees: Email addresses to invite.
    """
    first = _time(start, ctx)
    last = _time(end, ctx) if end else first + timedelta(hours=1)
    if last <= first:
        return ToolOutcome.refused("Refused: the end must be after the start; nothing was "
                                   "added.")
    try:
        account = await _account(ctx)
        if not account.writable:
            return ToolOutcome.refused(f"Refused: {READ_ONLY}; nothing was added.")
        clashes = [e for e in await read_events(account, first, last, ctx.tz, ctx.session())
                   if not e.all_day]
        await sources.create_event(account, title, first, last, ctx.clock.now(), location,
                                   tuple(attendees or ()))
    except CalendarError as err:
        return ToolOutcome.failed(f"Error: {err}")
    local_start, local_end = first.astimezone(ctx.tz), last.astimezone(ctx.tz)
    done = f"Added “{title}” {local_start:%a %d %b %H:%M}-{local_end:%H:%M}."
    if clashes:
        done += " Tell the user it overlaps:\n" + quote_untrusted(
            "; ".join(e.line(ctx.tz) for e in clashes), note=EVENTS_NOTE)
    return ToolOutcome.done(done)


def _changed(err: CalendarError) -> ToolOutcome:
    """A change the calendar did not make: declined (nothing to change) or failed."""
    if isinstance(err, Declined):
        return ToolOutcome.refused(f"Refused: {err}; nothing was changed.")
    return ToolOutcome.failed(f"Error: {err}")


@tool(progress="moving the event", prepare=check_move, does=CHANGES)
async def move_event(ctx: ToolExecutionContext, event_id: str, title: str, start: str,
                     end: str | None = None) -> ToolOutcome:
    """Move an event of the user's calendar to a new time.

    Args:
        event_id: The id from list_events.
        title: Its title, as listed.
        start: New start, YYYY-MM-DDTHH:MM in the user's time.
        end: New end (default: one hour after start).
    """
    first = _time(start, ctx)
    last = _time(end, ctx) if end else first + timedelta(hours=1)
    try:
        account = await _account(ctx)
        if not account.writable:
            return ToolOutcome.refused(f"Refused: {READ_ONLY}; nothing was moved.")
        moved = await sources.move_event(account, event_id, first, last)
    except CalendarError as err:
        return _changed(err)
    return ToolOutcome.done(f"Moved “{moved}” to {first.astimezone(ctx.tz):%a %d %b %H:%M}.")


@tool(progress="cancelling the event", prepare=check_cancel, does=CHANGES)
async def cancel_event(ctx: ToolExecutionContext, event_id: str, title: str) -> ToolOutcome:
    """Delete an event from the user's calendar.

    Args:
        event_id: The id from list_events.
        title: Its title, as listed.
    """
    try:
        account = await _account(ctx)
        if not account.writable:
            return ToolOutcome.refused(f"Refused: {READ_ONLY}; nothing was cancelled.")
        cancelled = await sources.cancel_event(account, event_id)
    except CalendarError as err:
        return _changed(err)
    return ToolOutcome.done(f"Cancelled “{cancelled}”.")


# --- how the approval reads (title, time as the person gave it, attendees) --------------------

def _at(value: Any, *, time_only: bool = False) -> str:
    """A start or end as the card's reader reads it (persona.spoken: their locale)."""
    try:
        at = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)[-5:] if time_only else str(value)
    return card_time(at) if time_only else card_moment(at)


def _summarize_create(args: dict[str, Any]) -> str:
    end = f"-{_at(args['end'], time_only=True)}" if args.get("end") else ""
    who = say("card_event_guests", attendees=", ".join(args["attendees"])) \
        if args.get("attendees") else ""
    where = say("card_event_place", location=args["location"]) if args.get("location") else ""
    return say("card_event_add", title=args.get("title"), start=_at(args.get("start")), end=end,
               place=where, guests=who)


def _summarize_move(args: dict[str, Any]) -> str:
    return say("card_event_move", title=args.get("title"), start=_at(args.get("start")))


def _summarize_cancel(args: dict[str, Any]) -> str:
    return say("card_event_cancel", title=args.get("title"))


create_event.__valet_tool__.summarize = _summarize_create
move_event.__valet_tool__.summarize = _summarize_move
cancel_event.__valet_tool__.summarize = _summarize_cancel


async def capability_status(settings: Any, db: Any) -> CapabilityStatus:
    """On once a calendar is connected and the key opens it."""
    return await connected_status(db, SERVICE)
