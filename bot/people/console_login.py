"""How the owner gets into the web console (bot/app/console): a one-time login link sent to
their own chat, the session it opens, and the record of what was done there.

A link is a random token, good once and for ten minutes; a session is another random token
in an HttpOnly cookie, with its own CSRF token for the forms. Only their SHA-256 hashes are
stored, so a copy of the database logs nobody in. Only an owner can be issued a link.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.contracts.people import User
from bot.db import Database, Row

LINK_TTL = timedelta(minutes=10)


class NotOwner(PermissionError):
    """Console links are for the owner only."""


@dataclass(frozen=True)
class ConsoleSession:
    token: str  # the cookie's value (known only to the browser that holds it)
    user_id: str
    csrf: str  # every form carries it back
    expires_at: datetime

    @property
    def short(self) -> str:
        """A handle for the record of actions that does not give the session away."""
        return token_hash(self.token)[:8]


@dataclass(frozen=True)
class ConsoleAction:
    at: datetime
    user_id: str
    session: str
    action: str
    target: str
    outcome: str
    remote: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _action(row: Row) -> ConsoleAction:
    return ConsoleAction(row["at"], row["user_id"], row["session"], row["action"],
                         row["target"], row["outcome"], row["remote"])


class ConsoleLogins:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- links ---------------------------------------------------------------------------

    async def issue_link(self, user: User, at: datetime, ttl: timedelta = LINK_TTL) -> str:
        """A fresh one-time token for the owner (NotOwner for anyone else)."""
        if not user.is_owner or user.blocked:
            raise NotOwner(f"{user.id} is not the owner: console links are for the owner only")
        token = secrets.token_urlsafe(32)
        await self.db.execute(
            "INSERT INTO console_links (token_hash, user_id, created_at, expires_at)"
            " VALUES ($1, $2, $3, $4)", token_hash(token), user.id, at, at + ttl)
        return token

    async def redeem_link(self, token: str, at: datetime) -> str | None:
        """The user the link was issued to, once, while it is fresh; None otherwise (used,
        expired or never issued)."""
        row = await self.db.fetchrow(
            "UPDATE console_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL"
            " AND expires_at > $2 RETURNING user_id", token_hash(token.strip()), at)
        return str(row["user_id"]) if row else None

    async def link_waiting(self, token: str, at: datetime) -> bool:
        """The link is still good (shown before it is used: a preview fetch uses nothing)."""
        return await self.db.fetchval(
            "SELECT 1 FROM console_links WHERE token_hash = $1 AND used_at IS NULL"
            " AND expires_at > $2", token_hash(token.strip()), at) is not None

    # --- sessions ------------------------------------------------------------------------

    async def open_session(self, user_id: str, at: datetime, ttl: timedelta,
                           remote: str = "") -> ConsoleSession:
        await self.db.execute("DELETE FROM console_sessions WHERE expires_at <= $1", at)
        await self.db.execute("DELETE FROM console_links WHERE expires_at <= $1", at)
        session = ConsoleSession(secrets.token_urlsafe(32), user_id, secrets.token_urlsafe(24),
                                 at + ttl)
        await self.db.execute(
            "INSERT INTO console_sessions (token_hash, user_id, csrf, created_at, expires_at,"
            " remote) VALUES ($1, $2, $3, $4, $5, $6)", token_hash(session.token), user_id,
            session.csrf, at, session.expires_at, remote)
        return session

    async def session(self, token: str, at: datetime) -> ConsoleSession | None:
        """The live session this cookie names; None when unknown or expired."""
        row = await self.db.fetchrow(
            "SELECT user_id, csrf, expires_at FROM console_sessions WHERE token_hash = $1"
            " AND expires_at > $2", token_hash(token), at)
        if row is None:
            return None
        return ConsoleSession(token, row["user_id"], row["csrf"], row["expires_at"])

    async def close_session(self, token: str) -> None:
        await self.db.execute("DELETE FROM console_sessions WHERE token_hash = $1",
                              token_hash(token))

    # --- what was done -------------------------------------------------------------------

    async def record(self, at: datetime, user_id: str, session: str, action: str,
                     target: str = "", outcome: str = "", remote: str = "") -> None:
        await self.db.execute(
            "INSERT INTO console_actions (at, user_id, session, action, target, outcome,"
            " remote) VALUES ($1, $2, $3, $4, $5, $6, $7)", at, user_id, session, action,
            target, outcome, remote)

    async def recent_actions(self, limit: int = 20) -> list[ConsoleAction]:
        rows = await self.db.fetch(
            "SELECT * FROM console_actions ORDER BY at DESC, id DESC LIMIT $1", limit)
        return [_action(r) for r in rows]
