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
    # The latest day they spent on, read with their row at the start of a turn (bot.budget);
    # None when read otherwise.
    spent: DaySpend | None = None
    # The language Valet writes to them in (persona.catalog); None: the persona's.
    language: str | None = None
    # The language proposed to them after their first messages, while it waits for a yes.
    language_offer: str | None = None


@dataclass(frozen=True)
class DaySpend:
    """What one person spent (or a month of days added up), in millionths of a dollar."""

    day: str = ""
    llm: int = 0
    messages: int = 0  # what the messages sent cost (a channel that charges: SMS)
    raised: int = 0
    # The worst cost of the latest LLM call the meter refused in the window (bot.meter): the
    # person is at their allowance until it fits again.
    refused: int = 0

    @property
    def total(self) -> int:
        return self.llm + self.messages
