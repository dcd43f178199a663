"""Access control, before anything else: only known people reach the LLM.

Policies per channel: `allowlist` (configured ids / E.164 numbers are let in on first
contact, everyone else is ignored) and `pairing` (an unknown sender gets one short reply with
a code; the owner approves it). An unknown or blocked sender costs at most one short reply,
and on a limited channel (SMS) at most one a day, within an hourly allowance for all strangers
together (bot.people.strangers); the owner hears of new requests in batches
(bot.gateway.pairing_notices).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.config.policies import AccessSettings
from bot.contracts.envelopes import ApprovalPrompt, PromptKind
from bot.contracts.options import Option
from bot.contracts.people import User
from bot.db import Database, Row
from bot.people.claims import ClaimOutcome, OwnerClaims, claim_candidate
from bot.people.guesses import GuessVerdict, guess_limiter
from bot.people.identity import IdentityStore, new_code
from bot.people.strangers import Decision, StrangerReplies, Verdict
from persona.lines import DEFAULT, fill
from persona.lines_people import AccessLines
from persona.speaking import speaking_to

log = logging.getLogger(__name__)

NAME_LIMIT = 40  # characters of a sender-chosen name shown to the owner


def one_line(text: str, limit: int = NAME_LIMIT) -> str:
    """Sender-chosen text made safe to show: control characters and line breaks become
    spaces, runs of space collapse, and it is cut to `limit` characters."""
    cleaned = "".join(" " if unicodedata.category(c)[0] == "C" or c in "\u2028\u2029" else c
                      for c in text)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    return cleaned if len(cleaned) <= limit else cleaned[:limit - 1].rstrip() + "…"


def quoted(text: str, limit: int = NAME_LIMIT) -> str:
    """Sender-chosen text visibly as the sender's words: one line, capped, in quotes."""
    # The sender cannot close our quotes early: their own curly quotes become straight ones.
    inner = one_line(text, limit).replace("“", '"').replace("”", '"')
    return f"“{inner}”"


@dataclass(frozen=True)
class Admission:
    user: User | None
    reply: str | None = None  # the one short reply an unknown sender may get
    # Something the owner is told, once per `owner_key`; a function: composed for each owner,
    # in their language (bot.gateway.outbound.notify_owner).
    notify_owner: str | Callable[[], str] | None = None
    owner_key: str | None = None
    handled: bool = False  # the message was a /link and is fully dealt with
    # A pairing request was made: the owner hears of it (bot.gateway.pairing_notices).
    pairing_code: str | None = None
    # The address was marked unreachable (a permanent send failure): writing again lifts it.
    unreachable: bool = False


@dataclass(frozen=True)
class PairingRequest:
    code: str
    channel: str
    address: str
    display_name: str
    status: str
    created_at: datetime
    expires_at: datetime
    user_id: str | None


def pairing_request(row: Row) -> PairingRequest:
    return PairingRequest(row["code"], row["channel"], row["address"], row["display_name"],
                          row["status"], row["created_at"], row["expires_at"], row["user_id"])


class AccessControl:
    def __init__(self, db: Database, identities: IdentityStore, settings: AccessSettings,
                 default_timezone: str, *, lines: AccessLines,
                 claims: OwnerClaims | None = None,
                 strangers: StrangerReplies | None = None) -> None:
        self.db = db
        self.identities = identities
        self.settings = settings
        self.default_timezone = default_timezone
        self.lines = lines  # what a stranger and the owner are told
        self.guesses = guess_limiter(settings, db)
        self.claims = claims  # the owner's claim code, while no owner address is known
        # What a stranger's replies may cost (SMS: one a day, an hourly cap, countries).
        self.strangers = strangers or StrangerReplies(db, {})

    async def admit(self, channel: str, address: str, display_name: str, text: str,
                    at: datetime, account: str | None = None) -> Admission:
        found = await self.identities.lookup(channel, address)
        if found is not None:
            identity, user = found
            return Admission(None if user.blocked else user,
                             unreachable=identity.unreachable_at is not None)
        member = await self.identities.resolve(channel, account) \
            if account and account != address else None
        if member is not None:
            # A group member whose own account Valet knows: the same person, now known by
            # this member address too (never the group as a whole).
            await self.identities.link(channel, address, member.id,
                                       display_name=one_line(display_name), at=at)
            return Admission(None if member.blocked else member)
        display_name = one_line(display_name)  # stored and shown to the owner: one line
        claimed = await self._claim(text, channel, address, display_name, at)
        if claimed is not None:
            return claimed
        words = text.strip().split()
        if len(words) == 2 and words[0].lower() == "/link":
            return await self._redeem_link(words[1], channel, address, display_name, at)
        policy = self.settings.for_channel(channel)
        if address in policy.allow:
            return Admission(await self.identities.create_user(
                channel, address, display_name=display_name,
                default_timezone=self.default_timezone, at=at))
        if policy.policy == "allowlist":
            log.info("ignored %s sender %s (not on the allowlist)", channel, address)
            return Admission(None)
        return await self._pairing(channel, address, display_name, at)

    async def _claim(self, text: str, channel: str, address: str, display_name: str,
                     at: datetime) -> Admission | None:
        """`/start CODE` (or the code alone) while a claim code was issued: a guess at it. The
        winner is the owner now; anyone else goes on to the access policy as before."""
        code = claim_candidate(text)
        if ":" in address:  # a member of a group chat: the owner claims in a private chat
            return None
        if self.claims is None or code is None or not await self.claims.issued():
            return None
        outcome = await self.claims.attempt(code, channel, address, display_name=display_name,
                                            at=at)
        if outcome is not ClaimOutcome.CLAIMED:
            return None
        await self._pairings_after_claim(channel, address, at)
        return Admission(await self.identities.users.get(self.claims.owner_id), handled=True,
                         reply=self.claims.welcome)

    async def _pairings_after_claim(self, channel: str, address: str, at: datetime) -> None:
        """The new owner's own pairing request (they wrote before they claimed) is settled:
        they are in. Strangers' requests made while nobody could answer them expire: each gets
        a fresh code, and the owner a notice at once, when they write again."""
        assert self.claims is not None
        await self.db.execute(
            "UPDATE pairing_requests SET status = 'approved', decided_at = $3, user_id = $4"
            " WHERE channel = $1 AND address = $2 AND status = 'pending'",
            channel, address, at, self.claims.owner_id)
        expired = await self.db.execute(
            "UPDATE pairing_requests SET status = 'expired', decided_at = $2"
            " WHERE status = 'pending' AND created_at <= $1", at, at)
        if expired:
            log.warning("%s pairing request(s) made before the owner claimed this Valet "
                        "expired: they get a new code when they write again", expired)
        # Notices of requests before the claim reached nobody who reads them: the window
        # (bot.gateway.pairing_notices) starts afresh, and the next request is told at once.
        await self.db.execute("DELETE FROM owner_notices WHERE kind = 'pairing'")

    async def _redeem_link(self, code: str, channel: str, address: str, display_name: str,
                           at: datetime) -> Admission:
        """A stranger's /link CODE, counted against their allowance before it is looked at."""
        verdict = await self.guesses.take_try("link", channel, address, at)
        if verdict is GuessVerdict.REFUSED:
            log.info("ignored a /link code from %s %s: too many wrong codes", channel, address)
            return Admission(None)
        linked = await self.identities.redeem_link_code(
            code, channel, address, display_name=display_name, at=at)
        if linked:
            await self.guesses.forget("link", channel, address)
            person = await self.identities.users.get(linked)
            with speaking_to(person.language if person is not None else None):  # theirs
                done = self.lines.link_done
            return Admission(person, handled=True, reply=done)
        quiet = await self._no_reply(channel, address, at)
        if quiet is not None:
            return quiet
        if verdict is GuessVerdict.LAST_TRY:
            log.warning("%s %s reached the limit of wrong /link codes", channel, address)
            return Admission(None, reply=self.lines.link_no_more_guesses)
        return Admission(None, reply=self.lines.link_unknown_code)

    async def _no_reply(self, channel: str, address: str, at: datetime) -> Admission | None:
        """None when this stranger may get its one reply now (it is counted); else the
        silent answer, with the owner's one notice when the hourly allowance just ran out."""
        decision = await self.strangers.take(channel, address, at)
        if decision.may_reply:
            return None
        if decision.verdict is Verdict.CAPPED and decision.first_refused:
            return Admission(None, notify_owner=self._capped_notice(channel, decision, at),
                             owner_key=f"strangers-capped:{channel}:"
                                       f"{decision.window_start:%Y%m%dT%H%M%S}")
        return Admission(None)

    def _capped_notice(self, channel: str, decision: Decision,
                       at: datetime) -> Callable[[], str]:
        assert decision.window_ends is not None
        minutes = max(1, round((decision.window_ends - at).total_seconds() / 60))
        limits = self.strangers.limits[channel]
        return lambda: fill(self.lines.strangers_capped, count=limits.per_hour, channel=channel,
                            minutes=minutes)

    async def _pairing(self, channel: str, address: str, display_name: str,
                       at: datetime) -> Admission:
        await self.expire(at)
        earlier = await self.db.fetchrow(
            "SELECT status FROM pairing_requests WHERE channel = $1 AND address = $2"
            " AND status IN ('pending', 'denied') LIMIT 1", channel, address)
        if earlier is not None:
            return Admission(None)  # already answered once (or refused): stay quiet
        quiet = await self._no_reply(channel, address, at)
        if quiet is not None:
            return quiet  # no reply, and so no request the sender could not know the code of
        await self._make_room(channel, at)
        code = new_code()
        inserted = await self.db.execute(
            "INSERT INTO pairing_requests (code, channel, address, display_name, status,"
            " created_at, expires_at) VALUES ($1, $2, $3, $4, 'pending', $5, $6)"
            " ON CONFLICT (code) DO NOTHING",
            code, channel, address, display_name, at,
            at + timedelta(minutes=self.settings.pairing_ttl_minutes))
        if not inserted:
            return Admission(None)
        return Admission(None, reply=fill(self.lines.pairing_stranger, code=code),
                         pairing_code=code)

    async def _make_room(self, channel: str, at: datetime) -> None:
        """At most `max_pending_pairings` wait per channel: the oldest ones expire so that a
        new person still gets their answer (nobody is dropped without a word)."""
        pending = int(await self.db.fetchval(
            "SELECT COUNT(*) FROM pairing_requests WHERE channel = $1 AND status = 'pending'",
            channel) or 0)
        excess = pending - self.settings.max_pending_pairings + 1
        if excess <= 0:
            return
        rows = await self.db.fetch(
            "UPDATE pairing_requests SET status = 'expired', decided_at = $3 WHERE code IN ("
            " SELECT code FROM pairing_requests WHERE channel = $1 AND status = 'pending'"
            " ORDER BY created_at, code LIMIT $2) RETURNING code, address", channel, excess, at)
        for row in rows:
            log.warning("pairing request %s from %s %s expired early: %s requests are waiting "
                        "on %s", row["code"], channel, row["address"], pending, channel)

    async def expire(self, at: datetime) -> None:
        await self.db.execute(
            "UPDATE pairing_requests SET status = 'expired'"
            " WHERE status = 'pending' AND expires_at <= $1", at)

    async def list_pairings(self, at: datetime, *, pending_only: bool = True
                            ) -> list[PairingRequest]:
        await self.expire(at)
        rows = await self.db.fetch(
            "SELECT * FROM pairing_requests WHERE status = 'pending' OR $1 = 0"
            " ORDER BY created_at", int(pending_only))
        return [pairing_request(r) for r in rows]

    async def approve(self, code: str, at: datetime) -> User | None:
        """Let the sender behind a pending code in; None if no such pending code."""
        await self.expire(at)
        row = await self.db.fetchrow(
            "UPDATE pairing_requests SET status = 'approved', decided_at = $2"
            " WHERE code = $1 AND status = 'pending' RETURNING *", code.strip().upper(), at)
        if row is None:
            return None
        user = await self.identities.resolve(row["channel"], row["address"])
        if user is None:
            user = await self.identities.create_user(
                row["channel"], row["address"], display_name=row["display_name"],
                default_timezone=self.default_timezone, at=at)
        await self.db.execute("UPDATE pairing_requests SET user_id = $1 WHERE code = $2",
                              user.id, row["code"])
        return user

    async def pairing_outcomes(self, codes: Sequence[str], at: datetime) -> dict[str, str]:
        """What became of each pairing request, in a word for its card ("waiting" while it
        waits)."""
        await self.expire(at)
        words = {"approved": "Let in", "denied": "Refused", "expired": "Expired"}
        found = {}
        for code in codes:
            status = await self.db.fetchval(
                "SELECT status FROM pairing_requests WHERE code = $1", code)
            if status is not None:
                found[code] = words.get(status, "waiting")
        return found

    async def deny(self, code: str, at: datetime) -> bool:
        changed = await self.db.execute(
            "UPDATE pairing_requests SET status = 'denied', decided_at = $2"
            " WHERE code = $1 AND status = 'pending'", code.strip().upper(), at)
        return changed > 0


def who_asks(request: PairingRequest, lines: AccessLines = DEFAULT) -> str:
    """The sender of a pairing request as the owner reads it: their name quoted, on one
    line, and where they wrote from."""
    where = f"{request.channel} {one_line(request.address)}"
    return (fill(lines.pairing_who_named, name=quoted(request.display_name), where=where)
            if request.display_name else fill(lines.pairing_who, where=where))


def pairing_prompt(code: str, lines: AccessLines = DEFAULT) -> ApprovalPrompt:
    """A pairing request as a choice the owner can tap (Telegram buttons), a prompt of its
    own kind whose id is the code; typing /pair approve CODE works everywhere."""
    return ApprovalPrompt(id=code, code=code, position=1,
                          summary=fill(lines.pairing_prompt, code=code),
                          options=(Option.APPROVE, Option.CANCEL), allow_modification=False,
                          kind=PromptKind.PAIRING)


