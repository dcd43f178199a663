"""Becoming the owner without knowing one's ids: when no owner address is configured,
`valet serve` opens a one-time claim code and prints it; the first person who sends it
(`/start CODE` on Telegram, the code alone by SMS) becomes the owner.

The claim is a compare-and-set on its row, so exactly one sender wins, also with several
processes; the code is dead afterwards. Guessing costs the guesser like every code a stranger
can try (bot.people.guesses): each attempt takes a try before the code is looked at, and a
second use of a spent code counts as a wrong guess. The winner's address is linked to the
owner at once, and `record` writes it into the configuration (valet.yaml) so it is there
after a restart and for whoever reads the file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from bot.db import Database
from bot.people.guesses import GuessLimiter, GuessVerdict
from bot.people.identity import CODE_ALPHABET, IdentityStore, new_code

log = logging.getLogger(__name__)

CLAIM_GUESS_KIND = "claim"
CLAIM_CODE_LENGTH = 8
_CANDIDATE = re.compile(rf"^(?:/start\s+)?([{CODE_ALPHABET}]{{{CLAIM_CODE_LENGTH}}})$",
                        re.IGNORECASE)

# Told the (channel, address) that became the owner's: writes it into the configuration.
OwnerRecorder = Callable[[str, str], Awaitable[None]]


class ClaimOutcome(Enum):
    CLAIMED = "claimed"  # the sender is the owner now
    WRONG = "wrong"  # not the open code (or no open code): counted as a guess
    REFUSED = "refused"  # too many guesses: not even looked at


def claim_candidate(text: str) -> str | None:
    """The code in `/start CODE` or a message that is only a code-shaped word; None
    otherwise (a stranger's ordinary message is never a guess)."""
    match = _CANDIDATE.match(text.strip())
    return match.group(1).upper() if match else None


@dataclass
class OwnerClaims:
    db: Database
    identities: IdentityStore
    guesses: GuessLimiter
    owner_id: str
    welcome: str  # what the new owner is told
    record: OwnerRecorder | None = None

    async def open(self, at: datetime) -> str:
        """The open code: the one still unclaimed (a restart prints the same), else a new
        one."""
        code = await self.open_code()
        if code is not None:
            return code
        code = new_code(CLAIM_CODE_LENGTH)
        await self.db.execute(
            "INSERT INTO owner_claims (code, created_at) VALUES ($1, $2)", code, at)
        return code

    async def open_code(self) -> str | None:
        value = await self.db.fetchval(
            "SELECT code FROM owner_claims WHERE claimed_at IS NULL ORDER BY created_at LIMIT 1")
        return str(value) if value is not None else None

    async def close(self, at: datetime) -> int:
        """An owner is configured now: any open code dies unused."""
        return await self.db.execute(
            "UPDATE owner_claims SET claimed_at = $1 WHERE claimed_at IS NULL", at)

    async def issued(self) -> bool:
        """Whether a claim code was ever opened here (then code-shaped messages from strangers
        are counted as guesses)."""
        return await self.db.fetchval("SELECT 1 FROM owner_claims LIMIT 1") is not None

    async def attempt(self, code: str, channel: str, address: str, *, display_name: str,
                      at: datetime) -> ClaimOutcome:
        verdict = await self.guesses.take_try(CLAIM_GUESS_KIND, channel, address, at)
        if verdict is GuessVerdict.REFUSED:
            log.info("ignored a claim code from %s %s: too many wrong codes", channel, address)
            return ClaimOutcome.REFUSED
        won = await self.db.fetchval(
            "UPDATE owner_claims SET claimed_at = $2, channel = $3, address = $4"
            " WHERE code = $1 AND claimed_at IS NULL RETURNING code",
            code.upper(), at, channel, address)
        if won is None:
            if verdict is GuessVerdict.LAST_TRY:
                log.warning("%s %s reached the limit of wrong claim codes", channel, address)
            return ClaimOutcome.WRONG
        await self.guesses.forget(CLAIM_GUESS_KIND, channel, address)
        await self.identities.link(channel, address, self.owner_id, display_name=display_name,
                                   at=at)
        log.warning("%s %s claimed the ownership of this Valet", channel, address)
        if self.record is not None:
            try:
                await self.record(channel, address)
            except Exception:  # linked in the database already: it works, and is told why not
                log.exception("the new owner %s %s could not be written into the "
                              "configuration; add it by hand", channel, address)
        return ClaimOutcome.CLAIMED
