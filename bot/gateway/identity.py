"""Identities: which person a (channel, address) pair is, and /link codes that join another
channel's address to the same person."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.db import Database
from bot.gateway.users import User, UserStore

# No 0/O, 1/I/L: codes are read aloud and typed on phones.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
# Country calling code -> a first guess at the timezone (the user can correct it by saying so).
PHONE_ZONES = {
    "+1": "America/New_York", "+44": "Europe/London", "+353": "Europe/Dublin",
    "+33": "Europe/Paris", "+49": "Europe/Berlin", "+34": "Europe/Madrid",
    "+39": "Europe/Rome", "+31": "Europe/Amsterdam", "+32": "Europe/Brussels",
    "+41": "Europe/Zurich", "+43": "Europe/Vienna", "+46": "Europe/Stockholm",
    "+47": "Europe/Oslo", "+45": "Europe/Copenhagen", "+358": "Europe/Helsinki",
    "+48": "Europe/Warsaw", "+351": "Europe/Lisbon", "+30": "Europe/Athens",
    "+7": "Europe/Moscow", "+90": "Europe/Istanbul", "+972": "Asia/Jerusalem",
    "+971": "Asia/Dubai", "+91": "Asia/Kolkata", "+86": "Asia/Shanghai",
    "+852": "Asia/Hong_Kong", "+81": "Asia/Tokyo", "+82": "Asia/Seoul",
    "+65": "Asia/Singapore", "+61": "Australia/Sydney", "+64": "Pacific/Auckland",
    "+55": "America/Sao_Paulo", "+52": "America/Mexico_City",
    "+54": "America/Argentina/Buenos_Aires",
    "+27": "Africa/Johannesburg", "+234": "Africa/Lagos", "+254": "Africa/Nairobi",
    "+20": "Africa/Cairo",
}


def new_code(length: int = 6) -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def guess_timezone(channel: str, address: str, default: str) -> str:
    if channel != "sms" or not address.startswith("+"):
        return default
    for width in (4, 3, 2):
        zone = PHONE_ZONES.get(address[:width])
        if zone:
            return zone
    return default


@dataclass(frozen=True)
class Identity:
    channel: str
    address: str
    user_id: str
    display_name: str


class IdentityStore:
    def __init__(self, db: Database, users: UserStore) -> None:
        self.db = db
        self.users = users

    async def resolve(self, channel: str, address: str) -> User | None:
        row = await self.db.fetchrow(
            "SELECT user_id FROM identities WHERE channel = $1 AND address = $2",
            channel, address)
        return await self.users.get(row["user_id"]) if row else None

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
            "SELECT channel, address, user_id, display_name FROM identities"
            " WHERE user_id = $1 ORDER BY created_at", user_id)
        return [Identity(**r) for r in rows]

    async def create_user(self, channel: str, address: str, *, display_name: str,
                          default_timezone: str, at: datetime, is_owner: bool = False) -> User:
        user_id = f"u_{uuid.uuid4().hex[:10]}"
        user = await self.users.ensure(
            user_id, display_name=display_name,
            timezone=guess_timezone(channel, address, default_timezone),
            is_owner=is_owner, at=at)
        await self.users.set_preferred_channel(user_id, channel)
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
