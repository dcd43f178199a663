"""Guessing costs the guesser: codes a stranger can try (a /link code) are limited per sender.

Every try takes a numbered place in the sender's window before the code is even looked at, so
concurrent guesses cannot slip past the limit, and the right code is refused once the limit is
reached. The try that reaches the limit gets the one reply saying so; later ones get silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from bot.config.policies import AccessSettings
from bot.db import Database


class GuessVerdict(Enum):
    TRY = "try"  # look the code up; a wrong one may be answered
    LAST_TRY = "last_try"  # look it up; a wrong one is answered with "no more tries"
    REFUSED = "refused"  # over the limit: do not look, do not answer


@dataclass(frozen=True)
class GuessLimiter:
    db: Database
    max_tries: int
    window: timedelta

    async def take_try(self, kind: str, channel: str, address: str,
                       at: datetime) -> GuessVerdict:
        """Count one try (atomically, on both backends) and say what it may do."""
        tries = await self.db.fetchval(
            "INSERT INTO access_attempts (channel, address, kind, window_start, attempts)"
            " VALUES ($1, $2, $3, $4, 1) ON CONFLICT (channel, address, kind) DO UPDATE SET"
            " attempts = CASE WHEN access_attempts.window_start <= $5 THEN 1"
            "                 ELSE access_attempts.attempts + 1 END,"
            " window_start = CASE WHEN access_attempts.window_start <= $5 THEN $4"
            "                     ELSE access_attempts.window_start END"
            " RETURNING attempts", channel, address, kind, at, at - self.window)
        if tries < self.max_tries:
            return GuessVerdict.TRY
        return GuessVerdict.LAST_TRY if tries == self.max_tries else GuessVerdict.REFUSED

    async def forget(self, kind: str, channel: str, address: str) -> None:
        """A right guess: the sender is who they said; their count starts again."""
        await self.db.execute(
            "DELETE FROM access_attempts WHERE channel = $1 AND address = $2 AND kind = $3",
            channel, address, kind)


def guess_limiter(settings: AccessSettings, db: Database) -> GuessLimiter:
    """The allowance for codes strangers can guess (link and claim codes alike)."""
    return GuessLimiter(db, settings.max_code_guesses,
                        timedelta(minutes=settings.code_guess_window_minutes))
