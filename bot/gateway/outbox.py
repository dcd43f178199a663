"""The outbox: every reply and proactive message is persisted before it is sent, then sent
by one delivery path (bot.gateway.delivery), with retries for transient failures, and marked
sent or dead.

Each address's messages form lanes (`Lane`): urgent ones (a reply to what the person just
sent, approval prompts, pairing, prompt edits), then the rest of a long message whose first
parts went out, then bulk (reminders, summaries, event results). The next message for an
address is the first one "on its way" in (lane, id) order; within a lane, order is arrival.

A message is claimed (pending -> sending) with a compare-and-set that holds only while
nothing is being sent to the same address and nothing ahead of it is on its way: two
deliverers (processes) never send a message twice, and an address's order holds across them.
A row found `sending` after a crash may or may not have reached the person; it is
dead-lettered as "outcome unknown" rather than sent again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, IntEnum
from typing import Any

from bot.contracts.envelopes import ApprovalPrompt, OutboundMessage, PromptKind, prompts_of, stop_of
from bot.db import Database, Queries, Row
from bot.plumbing.metrics import Waiting


class Lane(IntEnum):
    """Which of an address's queues a message waits in; lower goes first."""

    URGENT = 0  # someone is waiting for it: a reply, a prompt, pairing, a button's outcome
    REST = 1  # the later parts of a long message whose first parts went out
    BULK = 2  # nobody just asked: reminders, summaries, event results


def _message(r: Row) -> OutboundMessage:
    payload = json.loads(r["payload"]) if r["payload"] else {}
    return OutboundMessage(r["id"], r["user_id"], r["channel"], r["address"], r["text"],
                           # the tries that count towards giving up (not the waits)
                           prompts_of(payload), stop_of(payload), r["attempts"] - r["waits"],
                           kind=payload.get("kind", "reply"), dedupe_key=r["dedupe_key"] or "",
                           parts_sent=r["parts_sent"] or 0)


REPLY_KEY = "reply:"  # a turn's answer to what the person (or their task) said: reply:<row>

# A row found `sending` after its process died: it may or may not have reached the person.
OUTCOME_UNKNOWN = "delivery outcome unknown: the process stopped while sending"


class FateStatus(Enum):
    ON_ITS_WAY = "on_its_way"  # pending or being sent
    SENT = "sent"
    FAILED = "failed"  # dead: refused for good, or given up
    UNKNOWN = "unknown"  # dead: cut off while sending


@dataclass(frozen=True)
class Fate:
    """What became of one queued message (`OutboxStore.fate`)."""

    status: FateStatus
    error: str = ""


@dataclass(frozen=True)
class Head:
    """The first message of an address's queue: what goes next, once it may."""

    message: OutboundMessage
    sending: bool  # being sent now (by this process or another)
    next_attempt_at: datetime
    others: bool = True  # another message of the address is pending (due now or later)


# A row "on its way": being sent, or pending and either tried before (it waits for a retry:
# what comes after it waits too) or due. A row held for later and never tried (quiet hours)
# is not on its way: it holds nothing back.
_ON_ITS_WAY = ("(status = 'sending' OR (status = 'pending'"
               " AND (attempts > 0 OR next_attempt_at <= $3)))")


class OutboxStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def enqueue(self, q: Queries, *, dedupe_key: str, user_id: str | None, channel: str,
                      address: str, text: str, at: datetime, lane: Lane,
                      payload: dict[str, Any] | None = None,
                      not_before: datetime | None = None) -> int | None:
        """The new row's id; None if a message with this dedupe key exists already."""
        return await q.fetchval(
            "INSERT INTO outbox (dedupe_key, user_id, channel, address, text, payload, status,"
            " next_attempt_at, created_at, priority)"
            " VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9)"
            " ON CONFLICT (dedupe_key) DO NOTHING RETURNING id",
            dedupe_key, user_id, channel, address, text,
            json.dumps(payload) if payload else None, not_before or at, at, int(lane))

    async def due_addresses(self, at: datetime, limit: int) -> list[tuple[str, str]]:
        """Addresses with a message due now, those with urgent ones first."""
        rows = await self.db.fetch(
            "SELECT channel, address, MIN(priority) AS lane, MIN(id) AS first FROM outbox"
            " WHERE status = 'pending' AND next_attempt_at <= $1 GROUP BY channel, address"
            " ORDER BY lane, first LIMIT $2", at, limit)
        return [(r["channel"], r["address"]) for r in rows]

    async def head(self, channel: str, address: str, at: datetime) -> Head | None:
        """The address's first message on its way (see `_ON_ITS_WAY`); None: nothing to do."""
        row = await self.db.fetchrow(
            "SELECT *, EXISTS (SELECT 1 FROM outbox AS other WHERE other.channel = $1"
            " AND other.address = $2 AND other.status = 'pending' AND other.id <> outbox.id)"
            " AS others FROM outbox WHERE channel = $1 AND address = $2 AND " + _ON_ITS_WAY
            + " ORDER BY CASE WHEN status = 'sending' THEN 0 ELSE 1 END, priority, id LIMIT 1",
            channel, address, at)
        if row is None:
            return None
        return Head(_message(row), row["status"] == "sending", row["next_attempt_at"],
                    bool(row["others"]))

    async def in_flight(self, at: datetime) -> bool:
        """Something is due now or being sent right now."""
        return await self.db.fetchval(
            "SELECT 1 FROM outbox WHERE (status = 'pending' AND next_attempt_at <= $1)"
            " OR status = 'sending' LIMIT 1", at) is not None

    async def on_its_way(self, dedupe_key: str) -> bool:
        """The message with this key is still to be sent (pending or being sent)."""
        return await self.db.fetchval(
            "SELECT 1 FROM outbox WHERE dedupe_key = $1 AND status IN ('pending', 'sending')",
            dedupe_key) is not None

    async def claim(self, message_id: int, at: datetime) -> bool:
        """pending -> sending, only while nothing is being sent to the same address and no
        message ahead of it (a lower lane, or its own lane and earlier) is on its way: order
        holds even with several processes delivering, since only an address's first message
        on its way can ever be claimed."""
        return await self.db.execute(
            "UPDATE outbox SET status = 'sending', claimed_at = $2, attempts = attempts + 1"
            " WHERE id = $1 AND status = 'pending' AND next_attempt_at <= $2"
            " AND NOT EXISTS (SELECT 1 FROM outbox AS other"
            " WHERE other.channel = outbox.channel AND other.address = outbox.address"
            " AND other.id <> outbox.id AND (other.status = 'sending'"
            " OR (other.status = 'pending'"
            " AND (other.attempts > 0 OR other.next_attempt_at <= $2)"
            " AND (other.priority < outbox.priority"
            " OR (other.priority = outbox.priority AND other.id < outbox.id)))))",
            message_id, at) == 1

    async def mark_sent(self, message_id: int, channel_message_id: str | None,
                        at: datetime, *, text: str | None = None) -> None:
        """Sent; `text`, when given, replaces what is kept of it (a sign-in link's token
        taken out: bot.gateway.sign_in_links)."""
        await self.db.execute(
            "UPDATE outbox SET status = 'sent', sent_at = $2, channel_message_id = $3,"
            " last_error = NULL, text = COALESCE($4, text) WHERE id = $1", message_id, at,
            channel_message_id, text)

    async def retry_at(self, message_id: int, when: datetime, error: str, *,
                       counts: bool = True) -> None:
        """Back to pending until `when`. `counts=False`: the channel only asked us to wait,
        so the try does not bring the message nearer to giving up (it is still a try: the
        message is on its way, and later ones to the same address stay behind it)."""
        await self.db.execute(
            "UPDATE outbox SET status = 'pending', next_attempt_at = $2, last_error = $3,"
            " waits = waits + $4 WHERE id = $1", message_id, when, error, 0 if counts else 1)

    async def rest_later(self, message_id: int, parts_sent: int, at: datetime) -> None:
        """The first `parts_sent` parts of a long message went out: the rest waits in the REST
        lane (after the address's urgent messages, before its bulk). Not a failed try."""
        await self.db.execute(
            "UPDATE outbox SET status = 'pending', next_attempt_at = $2, parts_sent = $3,"
            " priority = $4, waits = waits + 1 WHERE id = $1",
            message_id, at, parts_sent, int(Lane.REST))

    async def dead(self, message_id: int, reason: str, *, text: str | None = None) -> None:
        await self.db.execute(
            "UPDATE outbox SET status = 'dead', last_error = $2, text = COALESCE($3, text)"
            " WHERE id = $1", message_id, reason, text)

    async def lost(self, message_id: int, reason: str) -> bool:
        """A sent row the channel later learnt never arrived (a delivery report), and could
        not send again: dead with the reason. False when the row is not `sent`."""
        return await self.db.execute(
            "UPDATE outbox SET status = 'dead', last_error = $2 WHERE id = $1"
            " AND status = 'sent'", message_id, reason) == 1

    async def retry_dead(self, message_id: int, at: datetime) -> bool:
        """A dead letter back to pending, due now, with a fresh allowance of tries (the owner
        asked for it, from the console). Only a dead row moves: False for any other. The
        reason it died stays in last_error until it is sent."""
        return await self.db.execute(
            "UPDATE outbox SET status = 'pending', attempts = 0, waits = 0, claimed_at = NULL,"
            " next_attempt_at = $2 WHERE id = $1 AND status = 'dead'", message_id, at) == 1

    async def get(self, message_id: int) -> Row | None:
        return await self.db.fetchrow("SELECT * FROM outbox WHERE id = $1", message_id)

    async def abandon_stale(self, older_than: datetime) -> int:
        return await self.db.execute(
            "UPDATE outbox SET status = 'dead', last_error = $2 WHERE status = 'sending'"
            " AND claimed_at < $1", older_than, OUTCOME_UNKNOWN)

    async def fate(self, dedupe_key: str) -> Fate | None:
        """What became of the message queued under this key (None: no such message)."""
        row = await self.db.fetchrow(
            "SELECT status, last_error FROM outbox WHERE dedupe_key = $1", dedupe_key)
        if row is None:
            return None
        status, error = row["status"], row["last_error"] or ""
        if status == "dead":
            return Fate(FateStatus.UNKNOWN if error == OUTCOME_UNKNOWN else FateStatus.FAILED,
                        error)
        return Fate(FateStatus.SENT if status == "sent" else FateStatus.ON_ITS_WAY, error)

    async def latest_to(self, channel: str, address: str) -> OutboundMessage | None:
        """The newest message queued for the address (what the person last saw, or is about
        to): a bare "1" answers the prompt in it."""
        row = await self.db.fetchrow(
            "SELECT * FROM outbox WHERE channel = $1 AND address = $2 ORDER BY id DESC LIMIT 1",
            channel, address)
        return _message(row) if row else None

    async def digit_prompt_to(self, channel: str, address: str,
                              scan: int = 20) -> ApprovalPrompt | None:
        """The prompt a bare "1" or "2" from this address answers: the one approval prompt
        of the newest message that asked for a digit, unless the conversation moved on since
        (a reply to the person came after it). A message that is no reply and asks nothing
        of the kind (a pairing notice a stranger caused, a reminder) changes nothing: what
        someone else does never changes what the person's next digit answers."""
        rows = await self.db.fetch(
            "SELECT * FROM outbox WHERE channel = $1 AND address = $2 ORDER BY id DESC"
            " LIMIT $3", channel, address, scan)
        for row in rows:
            message = _message(row)
            asked = [p for p in message.prompts if p.kind is PromptKind.APPROVAL]
            if asked:  # several in one message are answered by their codes, not a digit
                return asked[0] if len(message.prompts) == 1 else None
            if message.dedupe_key.startswith(REPLY_KEY):
                return None
        return None

    async def waiting_by_channel(self) -> dict[str, Waiting]:
        """What is still to go (pending or being sent), by channel, with its oldest row."""
        rows = await self.db.fetch(
            "SELECT channel, COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox"
            " WHERE status IN ('pending', 'sending') GROUP BY channel")
        return {r["channel"]: Waiting(int(r["n"]), r["oldest"]) for r in rows}

    async def dead_by_channel(self) -> dict[str, int]:
        rows = await self.db.fetch(
            "SELECT channel, COUNT(*) AS n FROM outbox WHERE status = 'dead' GROUP BY channel")
        return {r["channel"]: int(r["n"]) for r in rows}

    async def count(self, status: str) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM outbox WHERE status = $1", status) or 0)

    async def list(self, status: str | None = None, limit: int = 50, *,
                   user_id: str | None = None) -> list[Row]:
        return await self.db.fetch(
            "SELECT * FROM outbox WHERE ($1 = '' OR status = $1) AND ($3 = '' OR user_id = $3)"
            " ORDER BY id DESC LIMIT $2", status or "", limit, user_id or "")


