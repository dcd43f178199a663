"""Users: the people Valet serves. (Identities per channel, linking and access come with the
gateway.)"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from bot.budget import SPEND_COLUMNS, latest_spend
from bot.contracts.clock import Clock
from bot.contracts.people import User
from bot.db import Database, Row
from bot.db.turn_reads import Holding, forget, in_turn, learnt_holdings, read_once


def user_of(row: Row) -> User:
    """A person from their `users` row (other columns ignored)."""
    candidates = row.get("timezone_candidates") or ""
    return User(row["id"], row["display_name"], row["timezone"], row["preferred_channel"],
                bool(row["is_owner"]), bool(row["blocked"]), row["quiet_hours_start"],
                row["quiet_hours_end"], tuple(z for z in candidates.split(",") if z),
                latest_spend(row), row.get("language"),
                row.get("language_offered") if row.get("language_answered_at") is None
                else None)


class UserStore:
    """People. In a turn (bot.db.turn_reads) a person's row is read once, and with it, in the
    same statement, which of their stores hold anything the turn would read (`holdings`) and
    what they spent in the last 24 hours (bot.budget, bot.meter)."""

    def __init__(self, db: Database, holdings: Sequence[Holding] = (),
                 clock: Clock | None = None) -> None:
        self.db = db
        self.holdings = tuple(holdings)
        self.clock = clock  # for the 24 hours of spending read with the row
        columns = "".join(f", {h.exists} AS holds_{i}" for i, h in enumerate(self.holdings))
        self._with_holdings = f"SELECT *{columns}{SPEND_COLUMNS} FROM users WHERE id = $1"

    async def get(self, user_id: str) -> User | None:
        return await read_once(("user", user_id), lambda: self._read(user_id))

    async def _read(self, user_id: str) -> User | None:
        if not (self.holdings and in_turn()):
            row = await self.db.fetchrow("SELECT * FROM users WHERE id = $1", user_id)
            return user_of(row) if row else None
        now = self.clock.now() if self.clock is not None else datetime.now(UTC)
        row = await self.db.fetchrow(self._with_holdings, user_id, now - timedelta(hours=24))
        if row is None:
            return None
        learnt_holdings(user_id, [h.name for i, h in enumerate(self.holdings)
                                  if row[f"holds_{i}"]])
        return user_of(row)

    async def ensure(self, user_id: str, *, display_name: str = "", timezone: str = "UTC",
                     is_owner: bool = False, at: datetime,
                     timezone_candidates: tuple[str, ...] = ()) -> User:
        """The user, created on first sight; an existing user is left as it is."""
        created = await self.db.fetchrow(
            "INSERT INTO users (id, display_name, timezone, is_owner, created_at,"
            " timezone_candidates) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING"
            " RETURNING *", user_id, display_name, timezone, int(is_owner), at,
            ",".join(timezone_candidates) or None)
        if created is not None:
            return user_of(created)
        forget(("user", user_id))
        user = await self.get(user_id)
        assert user is not None
        return user

    async def list(self) -> list[User]:
        return [user_of(r) for r in await self.db.fetch("SELECT * FROM users ORDER BY created_at")]

    async def set_timezone(self, user_id: str, timezone: str) -> None:
        """The person's own choice: the guess from their number (and its candidates) ends."""
        await self._change(user_id, "UPDATE users SET timezone = $1, timezone_candidates = NULL"
                           " WHERE id = $2", timezone, user_id)

    async def mark_timezone_asked(self, user_id: str, at: datetime) -> bool:
        """True the first time only: the person is asked which zone is theirs once."""
        return await self.db.execute(
            "UPDATE users SET timezone_asked_at = $2 WHERE id = $1 AND timezone_asked_at IS NULL"
            " AND timezone_candidates IS NOT NULL", user_id, at) > 0

    async def language_of(self, user_id: str) -> str | None:
        """The language `user_id` reads (None: the persona's, or nobody known)."""
        user = await self.get(user_id)
        return user.language if user else None

    async def set_language(self, user_id: str, language: str | None, at: datetime) -> bool:
        """The person's language (None: the persona's); an open offer is answered by it."""
        return await self._change(
            user_id, "UPDATE users SET language = $1, language_answered_at = COALESCE("
            "language_answered_at, $3) WHERE id = $2", language, user_id, at) > 0

    async def offer_language(self, user_id: str, language: str) -> bool:
        """Proposes `language` once ever: False when something was proposed before or the
        person has one already (another turn got there first)."""
        return await self._change(
            user_id, "UPDATE users SET language_offered = $1 WHERE id = $2 AND language IS NULL"
            " AND language_offered IS NULL", language, user_id) > 0

    async def close_language_offer(self, user_id: str, at: datetime) -> None:
        """The offer was passed by (the next message was not a yes): it is not made again."""
        await self._change(user_id, "UPDATE users SET language_answered_at = $1 WHERE id = $2"
                           " AND language_answered_at IS NULL", at, user_id)

    async def set_display_name(self, user_id: str, name: str) -> None:
        await self._change(user_id, "UPDATE users SET display_name = $1 WHERE id = $2",
                           name, user_id)

    async def set_preferred_channel(self, user_id: str, channel: str) -> None:
        await self._change(user_id, "UPDATE users SET preferred_channel = $1 WHERE id = $2",
                           channel, user_id)

    async def set_quiet_hours(self, user_id: str, start: str | None, end: str | None) -> None:
        await self._change(user_id, "UPDATE users SET quiet_hours_start = $1,"
                           " quiet_hours_end = $2 WHERE id = $3", start, end, user_id)

    async def set_blocked(self, user_id: str, blocked: bool) -> bool:
        return await self._change(user_id, "UPDATE users SET blocked = $1 WHERE id = $2",
                                  int(blocked), user_id) > 0

    async def _change(self, user_id: str, sql: str, *args: object) -> int:
        """A change to the person's row: a turn that read it reads it again."""
        changed = await self.db.execute(sql, *args)
        forget(("user", user_id))
        return changed
