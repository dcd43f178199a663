"""Dates, times and amounts as the listener reads them (persona.speaking): the words around
them from the catalog ("mañana a las {time}"), the day, the time and the number from Babel in
the listener's locale ("15:00" in Madrid, "3:00 PM" in English; "0,52 $" in German).

Babel, because a locale's month and weekday names, its 12- or 24-hour clock and its decimal
comma are CLDR's data, kept up to date there: written by hand for five languages they would
be five tables to get wrong."""

from __future__ import annotations

from datetime import datetime

from babel.dates import format_date, format_datetime, format_time
from babel.numbers import format_currency, format_decimal

from persona.catalog import LOCALES, SOURCE, say
from persona.speaking import listener_language


def locale() -> str:
    """The listener's locale (English when nobody in particular listens)."""
    return LOCALES.get(listener_language() or SOURCE, LOCALES[SOURCE])


# How a time is texted where CLDR's short form reads stiffly: Valet's English has always
# written "15:00", "7:30"; German texts "7:30" rather than "07:30"; French "15 h", "7 h 30"
# (whole hours, other times). The rest take their locale's short time.
_TIME_PATTERNS = {"en": ("H:mm", "H:mm"), "de": ("H:mm", "H:mm"), "fr": ("H 'h'", "H 'h' mm")}


def spoken_time(at: datetime) -> str:
    patterns = _TIME_PATTERNS.get(listener_language() or SOURCE)
    if patterns is None:
        return format_time(at, "short", locale=locale())
    return format_time(at, patterns[0] if at.minute == 0 else patterns[1], locale=locale())


# A day and time on an approval card, short and absolute (a card is read later): "Thu 26 Nov
# 13:00" as Valet's English always wrote it; the weekday and month abbreviated as each locale
# does.
_CARD_PATTERNS = {"en": "EEE dd MMM HH:mm", "es": "EEE d MMM, H:mm", "fr": "EEE d MMM, H 'h' mm",
                  "de": "EEE, d. MMM, H:mm", "pt": "EEE, d MMM, HH:mm"}


def card_moment(at: datetime) -> str:
    pattern = _CARD_PATTERNS.get(listener_language() or SOURCE, _CARD_PATTERNS[SOURCE])
    return format_datetime(at, pattern, locale=locale())


def card_time(at: datetime) -> str:
    """The end of a span on a card ("13:45"), as `card_moment` writes its time."""
    if (listener_language() or SOURCE) == SOURCE:
        return format_time(at, "HH:mm", locale=locale())
    return spoken_time(at)


def spoken_date(at: datetime, *, weekday_only: bool = False) -> str:
    """"Monday" / "lunes"; or the weekday and date: "Monday 7 December", "lunes, 7 de
    diciembre", "Montag, 7. Dezember" (the order is the catalog's `when_date`)."""
    weekday = format_date(at, "EEEE", locale=locale())
    if weekday_only:
        return weekday
    return say("when_date", weekday=weekday, day=str(at.day),
               month=format_date(at, "MMMM", locale=locale()))


def spoken_when(at: datetime, now: datetime, *, with_time: bool = True) -> str:
    """`at` as the listener says it, from `now` (both in the person's timezone): "tomorrow at
    15:00", "demain à 15:00", "am Montag, 7:30" (a weekday within the week, else the date)."""
    local, today = at.astimezone(now.tzinfo), now.date()
    days = (local.date() - today).days
    time = spoken_time(local)
    if days == 0:
        return say("when_today", time=time) if with_time else say("when_today_only")
    if days == 1:
        return say("when_tomorrow", time=time) if with_time else say("when_tomorrow_only")
    day = spoken_date(local, weekday_only=1 < days < 7)
    return say("when_day", day=day, time=time) if with_time else day


def spoken_money(amount: float, currency: str = "USD") -> str:
    """An amount in the listener's locale: "$0.52", "0,52 $", "0,52 US$"."""
    return format_currency(amount, currency, locale=locale())


def spoken_number(number: float) -> str:
    """A count or a quantity in the listener's locale: "20", "7.5", "7,5"."""
    return format_decimal(number, locale=locale())
