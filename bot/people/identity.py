"""Identities: which person a (channel, address) pair is, and /link codes that join another
channel's address to the same person."""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.contracts.people import User
from bot.db import Database, Row
from bot.people.users import UserStore, user_of
from bot.text import phones
from bot.text.phones import TimezoneGuess

# No 0/O, 1/I/L: codes are read aloud and typed on phones.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"


def new_code(length: int = 6) -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


# An address that is a phone number (a channel whose addresses are E.164 numbers): a chat id,
# a group's "chat:member" or the terminal's "local" never is.
E164 = re.compile(r"\+[1-9][0-9]{6,14}")


def guess_timezone(address: str, default: str) -> TimezoneGuess:
    """From a phone number's prefix (provisional when it could be in several zones); any other
    address keeps the default."""
    if not E164.fullmatch(address):
        return TimezoneGuess(default)
    return phones.guess_timezone(address, default)


def writer(channel: str, address: str) -> str:
    """An SQL expression: the id of the person an address belongs to when they may write now
    (known, not blocked, not marked unreachable), else NULL. `channel` and `address` are the
    caller's placeholders ("$1", "$3"): the inbox stores a message with it in one statement."""
    return ("(SELECT i.user_id FROM identities i JOIN users u ON u.id = i.user_id"
            f" WHERE i.channel = {channel} AND i.address = {address} AND u.blocked = 0"
            " AND i.unreachable_at IS NULL)")


@dataclass(frozen=True)
class Identity:
    channel: str
    address: str
    user_id: str
    display_name: str
    opted_out_at: datetime | None = None  # said STOP: nothing is sent until START
    unreachable_at: datetime | None = None  # a permanent send failure: wait for them to write

    @property
    def writable(self) -> bool:
        """Valet may send here now (neither opted out nor marked unreachable)."""
        return self.opted_out_at is None and self.unreachable_at is None


_IDENTITY_COLUMNS = "channel, address, user_id, display_name, opted_out_at, unreachable_at"


def _identity(row: Row) -> Identity:
    return Identity(row["channel"], row["address"], row["user_id"], row["display_name"],
                    row["opted_out_at"], row["unreachable_at"])


class IdentityStore:
    """People's addresses per channel, and whether each can be written to: the one store
    that writes the opt-out (STOP/START) and unreachable marks."""

    def __init__(self, db: Database, users: UserStore) -> None:
        self.db = db
        self.users = users

    async def resolve(self, channel: str, address: str) -> User | None:
        found = await self.lookup(channel, address)
        return found[1] if found else None

    async def lookup(self, channel: str, address: str) -> tuple[Identity, User] | None:
        """The address and the person it belongs to, in one statement."""
        row = await self.db.fetchrow(
            "SELECT u.*, i.channel AS i_channel, i.address AS i_address,"
            " i.display_name AS i_display_name, i.opted_out_at AS i_opted_out_at,"
            " i.unreachable_at AS i_unreachable_at FROM identities i"
            " JOIN users u ON u.id = i.user_id WHERE i.channel = $1 AND i.address = $2",
            channel, address)
        if row is None:
            return None
        return Identity(row["i_channel"], row["i_address"], row["id"], row["i_display_name"],
                        row["i_opted_out_at"], row["i_unreachable_at"]), user_of(row)

    async def link(self, channel: str, address: str, user_id: str, *, display_name: str = "",
                   at: datetime) -> None:
        """Attach the address to the user (moving it if it belonged to someone else)."""
        await self.db.execute(
            "INSERT INTO identities (channel, address, user_id, display_name, created_at)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (channel, address)"
            " DO UPDATE SET user_id = excluded.user_id",
            channel, address, user_id, display_name, at)

    async def of_user(self, user_id: str) -> list[Identity]:
        rows = await self.db.fetch(
            f"SELECT {_IDENTITY_COLUMNS} FROM identities WHERE user_id = $1 ORDER BY created_at",
            user_id)
        return [_identity(r) for r in rows]

    async def get(self, channel: str, address: str) -> Identity | None:
        row = await self.db.fetchrow(
            f"SELECT {_IDENTITY_COLUMNS} FROM identities WHERE channel = $1 AND address = $2",
            channel, address)
        return _identity(row) if row else None

    async def set_opted_out(self, channel: str, address: str, opted_out: bool, *,
                            at: datetime | None = None) -> bool:
        """STOP (True) or START (False). False when the address is nobody's: then it is
        remembered by address (someone a person had Valet text said STOP)."""
        if opted_out and at is None:
            raise ValueError("opting out needs the time it happened")
        changed = await self.db.execute(
            "UPDATE identities SET opted_out_at = $3 WHERE channel = $1 AND address = $2",
            channel, address, at if opted_out else None) > 0
        if changed:
            return True
        if opted_out:
            await self.db.execute(
                "INSERT INTO stranger_opt_outs (channel, address, opted_out_at)"
                " VALUES ($1, $2, $3) ON CONFLICT (channel, address) DO NOTHING",
                channel, address, at)
        else:
            await self.db.execute(
                "DELETE FROM stranger_opt_outs WHERE channel = $1 AND address = $2",
                channel, address)
        return False

    async def opted_out(self, channel: str, address: str) -> bool:
        """The address said STOP (as a user's identity, or as nobody's) and not START."""
        identity = await self.get(channel, address)
        if identity is not None:
            return identity.opted_out_at is not None
        return await self.db.fetchval(
            "SELECT 1 FROM stranger_opt_outs WHERE channel = $1 AND address = $2",
            channel, address) is not None

    async def set_unreachable(self, channel: str, address: str, unreachable: bool, *,
                              at: datetime | None = None) -> bool:
        """A permanent send failure (True); the person wrote again (False)."""
        if unreachable and at is None:
            raise ValueError("marking unreachable needs the time it happened")
        return await self.db.execute(
            "UPDATE identities SET unreachable_at = $3 WHERE channel = $1 AND address = $2",
            channel, address, at if unreachable else None) > 0

    async def name_of(self, user: User) -> str:
        """How a person is named to others: their name, else the number or chat they write
        from; never the internal id."""
        if user.display_name.strip():
            return user.display_name
        identities = await self.of_user(user.id)
        return identities[0].address if identities else "someone"

    async def wrote_again(self, channel: str, address: str) -> None:
        """The person wrote from this identity: it is reachable again (an opt-out stays
        until they say START: only their channel's own keyword lifts it)."""
        await self.db.execute(
            "UPDATE identities SET unreachable_at = NULL WHERE channel = $1 AND address = $2"
            " AND unreachable_at IS NOT NULL", channel, address)

    async def create_user(self, channel: str, address: str, *, display_name: str,
                          default_timezone: str, at: datetime, is_owner: bool = False) -> User:
        user_id = f"u_{uuid.uuid4().hex[:10]}"
        guess = guess_timezone(address, default_timezone)
        user = await self.users.ensure(
            user_id, display_name=display_name, timezone=guess.zone,
            timezone_candidates=guess.candidates, is_owner=is_owner, at=at)
        await self.link(channel, address, user_id, display_name=display_name, at=at)
        return user

    # --- /link ---------------------------------------------------------------------------

    async def issue_link_code(self, user_id: str, *, at: datetime,
                              ttl: timedelta = timedelta(minutes=10)) -> str:
        code = new_code()
        await self.db.execute(
            "INSERT INTO link_codes (code, user_id, created_at, expires_at)"
            " VALUES ($1, $2, $3, $4)", code, user_id, at, at + ttl)
        return code

    async def redeem_link_code(self, code: str, channel: str, address: str, *,
                               display_name: str, at: datetime) -> str | None:
        """The user the address is now linked to, or None for an unknown/used/expired code."""
        row = await self.db.fetchrow(
            "UPDATE link_codes SET used_at = $2 WHERE code = $1 AND used_at IS NULL"
            " AND expires_at > $2 RETURNING user_id", code.strip().upper(), at)
        if row is None:
            return None
        await self.link(channel, address, row["user_id"], display_name=display_name, at=at)
        return str(row["user_id"])
