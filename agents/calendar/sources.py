"""Where a person's events come from: an ICS subscription URL (read only) or a CalDAV server
(read and write), described by their stored credential (bot.credentials, service "calendar").

The `caldav` library is synchronous (blocking HTTP): every CalDAV call runs in a thread
(`asyncio.to_thread`). A thread, not bot.plumbing.offload's worker process, because the work is
waiting on the network, not CPU, and the client and its session cannot be pickled; the
library's own timeout bounds each request. An ICS feed is any URL's content: it is fetched on
the shared aiohttp session with a size cap and parsed (recurrences expanded) in a killable
worker process with a deadline (bot.plumbing.offload.run_bounded, rule 18).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import aiohttp

from agents.calendar.events import Event, events_between, new_event_ics
from bot.plumbing.offload import run_bounded
from bot.plumbing.streams import read_capped
from bot.text.redact import redact_text

SERVICE = "calendar"
MAX_FEED_BYTES = 5_000_000
PARSE_SECONDS = 10.0
CALDAV_TIMEOUT = 20  # seconds, per request


class CalendarError(Exception):
    """The calendar could not be read or changed; the message is safe to show (no secret)."""


class Declined(CalendarError):
    """The change cannot be made as asked (no such event, a recurring one): nothing was
    changed, and nothing went wrong."""


@dataclass(frozen=True)
class CalendarAccount:
    kind: str  # "ics" | "caldav"
    url: str
    username: str = ""
    password: str = ""
    calendar: str = ""  # CalDAV: the calendar to write to (default: the first)

    @classmethod
    def from_secret(cls, secret: Mapping[str, str]) -> CalendarAccount:
        kind = secret.get("kind", "")
        if kind not in ("ics", "caldav") or not secret.get("url"):
            raise CalendarError("the stored calendar connection is incomplete: run "
                                "`valet connect calendar` again")
        return cls(kind, secret["url"], secret.get("username", ""),
                   secret.get("password", ""), secret.get("calendar", ""))

    def secret(self) -> dict[str, str]:
        return {"kind": self.kind, "url": self.url, "username": self.username,
                "password": self.password, "calendar": self.calendar}

    @property
    def writable(self) -> bool:
        return self.kind == "caldav"


async def read_events(account: CalendarAccount, start: datetime, end: datetime, tz: ZoneInfo,
                      http: aiohttp.ClientSession) -> list[Event]:
    if account.kind == "ics":
        text = await fetch_feed(account.url, http)
        return await run_bounded(events_between, [text], start, end, tz, timeout=PARSE_SECONDS)
    return await _in_thread(_caldav_events, account, start, end, tz)


async def fetch_feed(url: str, http: aiohttp.ClientSession) -> str:
    url = "https://" + url.removeprefix("webcal://") if url.startswith("webcal://") else url
    try:
        async with http.get(url) as response:
            if response.status != 200:
                raise CalendarError(f"the calendar feed answered HTTP {response.status}")
            body, too_big = await read_capped(response.content, MAX_FEED_BYTES)
    except aiohttp.ClientError as err:
        raise CalendarError(f"the calendar feed could not be reached: "
                            f"{redact_text(str(err))}") from err
    if too_big:  # an error, never a silently cut calendar
        raise CalendarError(f"the calendar feed is larger than {MAX_FEED_BYTES // 1_000_000} MB")
    text = body.decode("utf-8", errors="replace")
    if "BEGIN:VCALENDAR" not in text[:2000]:
        raise CalendarError("that URL did not return a calendar (no BEGIN:VCALENDAR)")
    return text


async def create_event(account: CalendarAccount, title: str, start: datetime, end: datetime,
                       stamp: datetime, location: str = "", attendees: tuple[str, ...] = ()
                       ) -> str:
    """The new event's uid."""
    uid = f"{uuid.uuid4().hex}@valet"
    ics = new_event_ics(uid, title, start, end, stamp, location, attendees)
    await _in_thread(_caldav_add, account, ics)
    return uid


async def move_event(account: CalendarAccount, uid: str, start: datetime, end: datetime) -> str:
    """The moved event's title."""
    return await _in_thread(_caldav_move, account, uid, start, end)


async def cancel_event(account: CalendarAccount, uid: str) -> str:
    """The cancelled event's title."""
    return await _in_thread(_caldav_delete, account, uid)


async def find_event(account: CalendarAccount, uid: str) -> tuple[str, bool]:
    """(title, recurring) of the event with this id; Declined when there is none."""
    found: tuple[str, bool] = await _in_thread(_caldav_find, account, uid)
    return found


async def check_connection(account: CalendarAccount, http: aiohttp.ClientSession) -> str:
    """What was found (for `valet connect`), or CalendarError saying why not."""
    if account.kind == "ics":
        text = await fetch_feed(account.url, http)
        return f"the feed has {text.count('BEGIN:VEVENT')} event(s)"
    names = await _in_thread(_caldav_names, account)
    if account.calendar and account.calendar not in names:
        raise CalendarError(f"no calendar named {account.calendar!r} (found: "
                            f"{', '.join(names) or 'none'})")
    return f"calendars: {', '.join(names) or 'none'}"


async def _in_thread(fn: Any, *args: Any) -> Any:
    try:
        return await asyncio.to_thread(fn, *args)
    except CalendarError:
        raise
    except Exception as err:  # the library's errors name the URL; never the password
        raise CalendarError(f"the CalDAV server failed: {type(err).__name__}: "
                            f"{redact_text(str(err))[:200]}") from err


# --- in a thread: the synchronous caldav library ---------------------------------------------

def _client(account: CalendarAccount) -> Any:
    import caldav

    host = urlsplit(account.url).hostname or ""
    loopback = host in ("localhost", "127.0.0.1", "::1")
    client: Any = caldav.DAVClient  # the library's own annotation on it is too loose to call
    return client(url=account.url, username=account.username or None,
                            password=account.password or None, timeout=CALDAV_TIMEOUT,
                            require_tls=not loopback)  # a password over plain HTTP: loopback only


def _calendars(client: Any) -> list[Any]:
    return list(client.principal().calendars())


def _target(account: CalendarAccount, client: Any) -> Any:
    calendars = _calendars(client)
    for cal in calendars:
        if not account.calendar or cal.get_display_name() == account.calendar:
            return cal
    raise CalendarError("no calendar to write to on the CalDAV server")


def _caldav_names(account: CalendarAccount) -> list[str]:
    with _client(account) as client:
        return [str(c.get_display_name() or c.url) for c in _calendars(client)]


def _caldav_events(account: CalendarAccount, start: datetime, end: datetime, tz: ZoneInfo
                   ) -> list[Event]:
    with _client(account) as client:
        texts = [obj.data for cal in _calendars(client)
                 for obj in cal.search(start=start, end=end, event=True, post_filter=False)]
    return events_between(texts, start, end, tz)  # the person's own server: a thread will do


def _caldav_add(account: CalendarAccount, ics: str) -> None:
    with _client(account) as client:
        _target(account, client).add_event(ics)


def _find(client: Any, uid: str) -> Any:
    for cal in _calendars(client):
        try:
            return cal.event_by_uid(uid)
        except Exception:  # not in this calendar (the library raises NotFoundError)
            continue
    raise Declined(f"there is no event with id {uid} in the calendar (list_events shows "
                   "the ids)")


def _caldav_find(account: CalendarAccount, uid: str) -> tuple[str, bool]:
    with _client(account) as client:
        component = _find(client, uid).icalendar_component
        return str(component.get("SUMMARY", "")), component.get("RRULE") is not None


def _caldav_move(account: CalendarAccount, uid: str, start: datetime, end: datetime) -> str:
    with _client(account) as client:
        found = _find(client, uid)
        component = found.icalendar_component
        if component.get("RRULE") is not None:
            raise Declined("that is a recurring event: moving one occurrence is not "
                           "supported yet; change it in the calendar app")
        for key in ("DTSTART", "DTEND", "DURATION"):
            component.pop(key, None)
        component.add("dtstart", start.astimezone(ZoneInfo("UTC")))
        component.add("dtend", end.astimezone(ZoneInfo("UTC")))
        found.save()
        return str(component.get("SUMMARY", ""))


def _caldav_delete(account: CalendarAccount, uid: str) -> str:
    with _client(account) as client:
        found = _find(client, uid)
        title = str(found.icalendar_component.get("SUMMARY", ""))
        found.delete()
        return title
