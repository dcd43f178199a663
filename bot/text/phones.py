"""Phone numbers: one spelling (E.164) everywhere, and a first guess at a number's timezone.

Every number Valet stores or compares (allowlists, owner numbers, an SMS sender) goes through
`normalize`, so "+1 (212) 555-0123" in valet.yaml and "+12125550123" from Twilio are the same
person. The timezone guess comes from libphonenumber's prefix data: a number can sit in
several zones (an area code across a zone border, a non-geographic number), and then the
guess is provisional and the person is asked once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:
    import phonenumbers

# phonenumbers (its metadata is large) is imported where a number is read: a process that
# never sees one (no SMS, no phone numbers in valet.yaml) never loads it.

# Above this many candidate zones the number says nothing useful (toll-free, non-geographic):
# the default zone is the provisional guess and the person is asked.
MAX_CANDIDATES = 8
# libphonenumber still names a few zones by their pre-2000s spelling.
_CANONICAL = {"Asia/Calcutta": "Asia/Kolkata", "Asia/Saigon": "Asia/Ho_Chi_Minh",
              "Asia/Katmandu": "Asia/Kathmandu", "Asia/Rangoon": "Asia/Yangon",
              "America/Buenos_Aires": "America/Argentina/Buenos_Aires"}


class PhoneNumberError(ValueError):
    """Not a phone number that can be written in E.164."""


def normalize(raw: str, default_region: str | None = None) -> str:
    """The number in E.164 ("+12125550123"). A number without "+" needs `default_region`
    (an ISO country code such as "US" or "GB")."""
    import phonenumbers

    text = raw.strip()
    try:
        number = phonenumbers.parse(text, default_region or None)
    except phonenumbers.NumberParseException as err:
        hint = "" if text.startswith("+") or default_region else \
            " (write it with its country code, e.g. +44..., or set sms.default_region)"
        raise PhoneNumberError(f"{raw!r} is not a phone number{hint}") from err
    if not phonenumbers.is_possible_number(number):
        raise PhoneNumberError(f"{raw!r} is not a possible phone number (wrong length?)")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def normalize_or_keep(raw: str, default_region: str | None = None) -> str:
    """For senders that may not be phone numbers at all (alphanumeric ids, short codes)."""
    try:
        return normalize(raw, default_region)
    except PhoneNumberError:
        return raw.strip()


def country_of(e164: str) -> str | None:
    """The country (ISO code: "US", "GB") a number belongs to; None for what is not a phone
    number (a short code, an alphanumeric sender) or a number no country has (+882...)."""
    import phonenumbers

    try:
        number = phonenumbers.parse(e164)
    except phonenumbers.NumberParseException:
        return None
    # A number outside the numbering plan's known ranges (a test or drama number) still has
    # its country code: the main country of that code.
    region = phonenumbers.region_code_for_number(number) or \
        phonenumbers.region_code_for_country_code(number.country_code or 0)
    return region if region and region not in ("001", "ZZ") else None


def in_countries(countries: list[str]) -> Callable[[str], bool]:
    """Whether a number belongs to one of these countries (ISO codes)."""
    allowed = frozenset(countries)

    def belongs(number: str) -> bool:
        return country_of(number) in allowed

    return belongs


@dataclass(frozen=True)
class TimezoneGuess:
    zone: str
    # Non-empty: the zone is a guess and these are the zones the number could be in (ask the
    # person once). Empty: the number names one zone, or nothing was known (the default).
    candidates: tuple[str, ...] = ()

    @property
    def provisional(self) -> bool:
        return bool(self.candidates)


def _known(zone: str) -> str | None:
    zone = _CANONICAL.get(zone, zone)
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return zone


@functools.cache
def _main_zones() -> dict[str, str]:
    """Country (ISO code) -> the zone tzdata lists first for it (GB: Europe/London)."""
    first: dict[str, str] = {}
    try:
        table = resources.files("tzdata").joinpath("zoneinfo", "zone.tab").read_text("utf-8")
    except (OSError, ModuleNotFoundError):
        return first
    for line in table.splitlines():
        fields = line.split("\t")
        if len(fields) >= 3 and not line.startswith("#"):
            first.setdefault(fields[0], fields[2])
    return first


def _zones_of(number: phonenumbers.PhoneNumber) -> list[str]:
    from phonenumbers import timezone as phone_timezones

    raw = phone_timezones.time_zones_for_number(number)
    if raw == (phone_timezones.UNKNOWN_TIMEZONE,):
        # A number libphonenumber cannot place (unassigned, a drama range): its country's.
        raw = phone_timezones._country_level_time_zones_for_number(number)
    return list(dict.fromkeys(z for z in (_known(r) for r in raw) if z))


def guess_timezone(e164: str, default: str) -> TimezoneGuess:
    import phonenumbers

    try:
        number = phonenumbers.parse(e164)
    except phonenumbers.NumberParseException:
        return TimezoneGuess(default)
    zones = _zones_of(number)
    if not zones:
        return TimezoneGuess(default)
    if len(zones) == 1:
        return TimezoneGuess(zones[0])
    country = phonenumbers.region_code_for_country_code(number.country_code or 0)
    main = _main_zones().get(country)
    zone = default if default in zones else main if main in zones else zones[0]
    return TimezoneGuess(zone, tuple(zones) if len(zones) <= MAX_CANDIDATES else (zone,))
