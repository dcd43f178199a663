"""The person a turn serves, as every layer sees them (stored by bot.people.users)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    id: str
    display_name: str
    timezone: str
    preferred_channel: str | None = None
    is_owner: bool = False
    blocked: bool = False
    quiet_hours_start: str | None = None
    quiet_hours_end: str | None = None
    # Non-empty while `timezone` is a guess from a phone number that could be in any of these
    # zones (ask the person once); empty once they said where they are.
    timezone_candidates: tuple[str, ...] = ()
