"""The inbox: every inbound message, persisted before the channel is acknowledged.

The database is the queue: a user's rows are claimed one at a time, in arrival order, by
whoever holds that user's lock. A crash leaves a row `processing`; the next holder of the
lock takes it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.contracts.envelopes import (
    ButtonPress,
    IncomingMessage,
    MediaRef,
    PromptKind,
    ThirdPartyText,
    TriggerMessage,
    Urgency,
)
from bot.db import Database, Queries, Row
from bot.people.identity import writer


@dataclass(frozen=True)
class InboxRow:
    id: int
    channel: str
    external_id: str
    address: str
    user_id: str | None
    text: str
    button: ButtonPress | None
    display_name: str
    status: str
    attempts: int
    received_at: datetime
    trigger_task_id: str | None = None  # a trigger's run, not a person's message
    reply_channel: str | None = None  # where a trigger's reply goes (None: preferred)
    urgency: Urgency = Urgency.NORMAL
    media: tuple[MediaRef, ...] = ()  # references only: the bytes are fetched per turn
    origin_channel: str | None = None  # where a trigger's task was set (after the preferred)
    waiting_behind: bool = False  # when claimed, another message of the person waited too
    # Someone else's words that came with the message (forwarded, quoted): never its text.
    third_party: tuple[ThirdPartyText, ...] = ()


def _media_json(media: tuple[MediaRef, ...]) -> str | None:
    return json.dumps([m.to_json() for m in media]) if media else None


def _media_of(raw: str | None) -> tuple[MediaRef, ...]:
    return tuple(MediaRef.from_json(m) for m in json.loads(raw)) if raw else ()


def _third_party_json(found: tuple[ThirdPartyText, ...]) -> str | None:
    return json.dumps([t.to_json() for t in found]) if found else None


def _third_party_of(raw: str | None) -> tuple[ThirdPartyText, ...]:
    return tuple(ThirdPartyText.from_json(t) for t in json.loads(raw)) if raw else ()


def _row(r: Row) -> InboxRow:
    button = ButtonPress(r["button_approval_id"], r["button_option"] or "",
                         kind=PromptKind(r["button_kind"] or PromptKind.APPROVAL.value)) \
        if r["button_approval_id"] else None
    return InboxRow(r["id"], r["channel"], r["external_id"], r["address"], r["user_id"],
                    r["text"], button, r["display_name"], r["status"], r["attempts"],
                    r["received_at"], r["trigger_task_id"], r["reply_channel"],
                    Urgency(r["urgency"] or "normal"), _media_of(r["media"]),
                    r["origin_channel"], bool(r.get("waiting_behind")),
                    _third_party_of(r.get("third_party")))


# A message as it is stored on arrival (`record`, `record_for_sender`).
_COLUMNS = ("channel, external_id, address, text, button_approval_id, button_option,"
            " button_kind, display_name, status, received_at, media, third_party")
_VALUES = "$1, $2, $3, $4, $5, $6, $7, $8, 'received', $9, $10, $11"


def _values(msg: IncomingMessage) -> tuple[Any, ...]:
    button = msg.button
    return (msg.channel, msg.external_id, msg.address, msg.text,
            button.approval_id if button else None, button.option if button else None,
            button.kind.value if button else None, msg.display_name, msg.received_at,
            _media_json(msg.media), _third_party_json(msg.third_party))


class InboxStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, msg: IncomingMessage) -> int | None:
        """The new row's id, or None when this (channel, external id) was seen before."""
        return await self.db.fetchval(
            f"INSERT INTO inbox ({_COLUMNS}) VALUES ({_VALUES})"
            " ON CONFLICT (channel, external_id) DO NOTHING RETURNING id", *_values(msg))

    async def record_for_sender(self, msg: IncomingMessage) -> tuple[int, str | None] | None:
        """`record`, stored straight into its sender's queue when the address is a person's
        who may write now (known, not blocked, not marked unreachable): (the new row's id,
        that person's id or None). None when this (channel, external id) was seen before."""
        row = await self.db.fetchrow(
            f"INSERT INTO inbox ({_COLUMNS}, user_id) VALUES ({_VALUES}, {writer('$1', '$3')})"
            " ON CONFLICT (channel, external_id) DO NOTHING RETURNING id, user_id",
            *_values(msg))
        return (int(row["id"]), row["user_id"]) if row else None

    async def record_for_user(self, msg: TriggerMessage, at: datetime) -> int | None:
        """A trigger's run for a user: queued like their messages, unique by its run key."""
        return await self.db.fetchval(
            "INSERT INTO inbox (channel, external_id, address, user_id, text, status,"
            " received_at, trigger_task_id, reply_channel, urgency, origin_channel)"
            " VALUES ('trigger', $1, '', $2, $3, 'received', $4, $5, $6, $7, $8)"
            " ON CONFLICT (channel, external_id) DO NOTHING RETURNING id",
            msg.key, msg.user_id, msg.text, at, msg.task_id, msg.channel, msg.urgency.value,
            msg.origin_channel)

    async def set_media(self, row_id: int, media: tuple[MediaRef, ...]) -> None:
        """An audio file's words, once heard, kept with its reference (bot.turn.media)."""
        await self.db.execute("UPDATE inbox SET media = $1 WHERE id = $2", _media_json(media),
                              row_id)

    async def set_text(self, row_id: int, text: str) -> None:
        """A voice note's transcript, once heard: a turn redone after a crash reuses it."""
        await self.db.execute("UPDATE inbox SET text = $1 WHERE id = $2", text, row_id)

    async def count_failure(self, channel: str, external_id: str, error: str,
                            at: datetime) -> int:
        """One more failed try to store or handle this message; how many there were so far
        (also before a restart)."""
        return int(await self.db.fetchval(
            "INSERT INTO inbox_tries (channel, external_id, tries, last_error, updated_at)"
            " VALUES ($1, $2, 1, $3, $4) ON CONFLICT (channel, external_id) DO UPDATE"
            " SET tries = inbox_tries.tries + 1, last_error = $3, updated_at = $4"
            " RETURNING tries", channel, external_id, error[:1000], at))

    async def unadmitted(self, channel: str, external_id: str) -> int | None:
        """The row of a message that was stored but never reached anyone's queue (its
        handling failed right after the insert), if there is one."""
        return await self.db.fetchval(
            "SELECT id FROM inbox WHERE channel = $1 AND external_id = $2"
            " AND status = 'received' AND user_id IS NULL", channel, external_id)

    async def people_since(self, at: datetime) -> int:
        """How many people wrote (not triggers) since then."""
        return int(await self.db.fetchval(
            "SELECT COUNT(DISTINCT user_id) FROM inbox WHERE channel <> 'trigger'"
            " AND user_id IS NOT NULL AND received_at >= $1", at) or 0)

    async def assign(self, row_id: int, user_id: str) -> None:
        await self.db.execute("UPDATE inbox SET user_id = $1 WHERE id = $2", user_id, row_id)

    async def close(self, q: Queries, row_id: int, status: str, at: datetime,
                    error: str | None = None) -> None:
        await q.execute("UPDATE inbox SET status = $1, processed_at = $2, error = $3"
                        " WHERE id = $4", status, at, error, row_id)

    async def close_unclaimed(self, row_id: int, status: str, at: datetime) -> bool:
        """Close a row no drain has claimed yet (a compare-and-set); False if one had."""
        return await self.db.fetchval(
            "UPDATE inbox SET status = $1, processed_at = $2 WHERE id = $3"
            " AND status = 'received' RETURNING id", status, at, row_id) is not None

    async def mark_steered(self, row_ids: list[int], turn_id: str, at: datetime) -> None:
        """These messages joined a running turn (bot.loop.steering): closed as part of it. A row
        closed already (a redone turn adds them again) stays as it is."""
        async with self.db.transaction() as tx:
            for row_id in row_ids:
                await tx.execute(
                    "UPDATE inbox SET status = 'steered', processed_at = $2, steered_into = $3"
                    " WHERE id = $1 AND status IN ('received', 'processing')",
                    row_id, at, turn_id)

    async def claim_next(self, user_id: str) -> InboxRow | None:
        """The user's oldest unfinished message, marked processing (caller holds the user's
        lock, so a row still `processing` is one a crashed turn left behind), and whether
        another waits behind it (`waiting_behind`): one statement."""
        claimed = await self.db.fetchrow(
            "UPDATE inbox SET status = 'processing', attempts = attempts + 1"
            " WHERE id = (SELECT id FROM inbox WHERE user_id = $1"
            " AND status IN ('received', 'processing') ORDER BY id LIMIT 1)"
            " RETURNING *, EXISTS (SELECT 1 FROM inbox AS later WHERE later.user_id = $1"
            " AND later.id > inbox.id AND later.status IN ('received', 'processing'))"
            " AS waiting_behind", user_id)
        return _row(claimed) if claimed else None

    async def hold(self, user_id: str, claimed_id: int) -> int:
        """The person is at their allowance: their unanswered messages wait (`held`), the one
        just claimed as if it had not been (its attempt is given back). How many wait."""
        return await self.db.execute(
            "UPDATE inbox SET status = 'held', attempts = CASE WHEN id = $2 THEN attempts - 1"
            " ELSE attempts END WHERE user_id = $1 AND status IN ('received', 'processing')",
            user_id, claimed_id)

    async def held_people(self) -> list[str]:
        rows = await self.db.fetch(
            "SELECT DISTINCT user_id FROM inbox WHERE status = 'held' AND user_id IS NOT NULL")
        return [r["user_id"] for r in rows]

    async def held_count(self, user_id: str) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM inbox WHERE user_id = $1 AND status = 'held'", user_id) or 0)

    async def release(self, user_id: str) -> int:
        """The person's waiting messages go on (in their order); how many."""
        return await self.db.execute(
            "UPDATE inbox SET status = 'received' WHERE user_id = $1 AND status = 'held'",
            user_id)

    async def users_with_work(self) -> list[str]:
        rows = await self.db.fetch(
            "SELECT DISTINCT user_id FROM inbox WHERE status IN ('received', 'processing')"
            " AND user_id IS NOT NULL")
        return [r["user_id"] for r in rows]

    async def users_left_waiting(self, received_before: datetime, stale_before: datetime,
                                 limit: int) -> list[str]:
        """People with a message nobody is working on (received before `received_before`,
        none of theirs `processing`), or one left `processing` since before `stale_before`:
        what the workers' sweep looks at (bot.gateway.sweep), at most `limit` of them."""
        rows = await self.db.fetch(
            "SELECT DISTINCT user_id FROM inbox AS w WHERE w.user_id IS NOT NULL AND ("
            " (w.status = 'received' AND w.received_at < $1 AND NOT EXISTS (SELECT 1 FROM"
            "  inbox AS p WHERE p.user_id = w.user_id AND p.status = 'processing'))"
            " OR (w.status = 'processing' AND w.received_at < $2)) LIMIT $3",
            received_before, stale_before, limit)
        return [r["user_id"] for r in rows]

    async def get(self, row_id: int) -> InboxRow | None:
        row = await self.db.fetchrow("SELECT * FROM inbox WHERE id = $1", row_id)
        return _row(row) if row else None

    async def count(self, status: str) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM inbox WHERE status = $1", status) or 0)
