"""Events out of iCalendar data: recurring sets expanded (RRULE, RDATE, EXDATE, moved
instances) in each event's own time zone, then shown in the person's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    import icalendar

# icalendar and recurring_ical_events are imported where a calendar is read or written: a
# process whose calendar capability is off never loads them (about 60 ms at start-up).

MAX_EVENTS = 500  # a range is cut here: a feed must not turn one question into megabytes


@dataclass(frozen=True)
class Event:
    uid: str
    title: str
    start: datetime  # aware; an all-day event starts at midnight in the person's zone
    end: datetime
    all_day: bool = False
    location: str = ""
    attendees: tuple[str, ...] = ()
    recurring: bool = False

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return self.start < end and start < self.end

    def line(self, tz: ZoneInfo) -> str:
        start, end = self.start.astimezone(tz), self.end.astimezone(tz)
        when = f"{start:%a %d %b} all day" if self.all_day else \
            f"{start:%a %d %b %H:%M}-{end:%H:%M}"
        extra = f" at {self.location}" if self.location else ""
        who = f" with {', '.join(self.attendees)}" if self.attendees else ""
        return f"{when} {self.title}{extra}{who} [id {self.uid}]"


def events_between(ics_texts: list[str], start: datetime, end: datetime, tz: ZoneInfo
                   ) -> list[Event]:
    """Every instance overlapping [start, end), sorted; floating times are the person's.
    A module-level function of plain values: it may run in a worker process
    (bot.plumbing.offload)."""
    import icalendar
    import recurring_ical_events

    found: list[Event] = []
    for text in ics_texts:
        calendar = icalendar.Calendar.from_ical(text)
        for component in recurring_ical_events.of(calendar).between(start, end):
            found.append(_event(component, tz))
            if len(found) >= MAX_EVENTS:
                break
    return sorted(found, key=lambda e: (e.start, e.title))


def _event(component: icalendar.Event, tz: ZoneInfo) -> Event:
    start_value = component.decoded("DTSTART")
    all_day = not isinstance(start_value, datetime)
    start = _aware(start_value, tz)
    if component.get("DTEND") is not None:
        end = _aware(component.decoded("DTEND"), tz)
    elif component.get("DURATION") is not None:
        end = start + component.decoded("DURATION")
    else:
        end = start + (timedelta(days=1) if all_day else timedelta(0))
    attendees = component.get("ATTENDEE") or []
    if not isinstance(attendees, list):
        attendees = [attendees]
    return Event(
        uid=str(component.get("UID", "")), title=str(component.get("SUMMARY", "(no title)")),
        start=start, end=end, all_day=all_day, location=str(component.get("LOCATION", "")),
        attendees=tuple(str(a).removeprefix("mailto:").removeprefix("MAILTO:")
                        for a in attendees),
        recurring=component.get("RRULE") is not None or
        component.get("RECURRENCE-ID") is not None)


def _aware(value: date | datetime, tz: ZoneInfo) -> datetime:
    if not isinstance(value, datetime):
        return datetime.combine(value, time(0), tzinfo=tz)
    return value if value.tzinfo is not None else value.replace(tzinfo=tz)


def new_event_ics(uid: str, title: str, start: datetime, end: datetime, stamp: datetime,
                  location: str = "", attendees: tuple[str, ...] = ()) -> str:
    """A VCALENDAR with one VEVENT, times in UTC (unambiguous for every server)."""
    import icalendar

    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//Valet//calendar//EN")
    calendar.add("version", "2.0")
    event = icalendar.Event()
    event.add("uid", uid)
    event.add("summary", title)
    event.add("dtstamp", stamp)
    event.add("dtstart", start.astimezone(ZoneInfo("UTC")))
    event.add("dtend", end.astimezone(ZoneInfo("UTC")))
    if location:
        event.add("location", location)
    for address in attendees:
        event.add("attendee", f"mailto:{address}")
    calendar.add_component(event)
    return calendar.to_ical().decode()
