"""The outbox: every reply and proactive message is persisted before it is sent, then sent
by one delivery path, with retries for transient failures, and marked sent or dead.

A message is claimed (pending -> sending) with a compare-and-set before the channel is asked,
so two workers never send it twice. A row found `sending` after a crash may or may not have
reached the person; it is dead-lettered as "outcome unknown" rather than sent again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.backoff import backoff_delay
from bot.channel import Channel, PermanentSendError, TransientSendError
from bot.clock import Clock
from bot.db import Database, Queries, Row
from bot.envelopes import OutboundMessage, prompts_of, stop_of

log = logging.getLogger(__name__)


# A sender is a channel as the outbox sees it: only `send` is needed to deliver.
ChannelSender = Channel
# Told when a send failed for good because the address cannot be written to any more.
OnPermanent = Callable[[OutboundMessage, PermanentSendError], Awaitable[None]]


def _message(r: Row) -> OutboundMessage:
    payload = json.loads(r["payload"]) if r["payload"] else {}
    return OutboundMessage(r["id"], r["user_id"], r["channel"], r["address"], r["text"],
                           # the tries that count towards giving up (not the waits)
                           prompts_of(payload), stop_of(payload), r["attempts"] - r["waits"],
                           kind=payload.get("kind", "reply"), dedupe_key=r["dedupe_key"] or "")


@dataclass(frozen=True)
class Waiting:
    count: int
    oldest: datetime | str | None  # SQLite gives an aggregate's time back as text


class OutboxStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def enqueue(self, q: Queries, *, dedupe_key: str, user_id: str | None, channel: str,
                      address: str, text: str, at: datetime,
                      payload: dict[str, Any] | None = None,
                      not_before: datetime | None = None) -> int | None:
        """The new row's id; None if a message with this dedupe key exists already."""
        return await q.fetchval(
            "INSERT INTO outbox (dedupe_key, user_id, channel, address, text, payload, status,"
            " next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8)"
            " ON CONFLICT (dedupe_key) DO NOTHING RETURNING id",
            dedupe_key, user_id, channel, address, text,
            json.dumps(payload) if payload else None, not_before or at, at)

    async def due(self, at: datetime, limit: int = 100) -> list[OutboundMessage]:
        rows = await self.db.fetch(
            "SELECT * FROM outbox WHERE status = 'pending' AND next_attempt_at <= $1"
            " ORDER BY id LIMIT $2", at, limit)
        return [_message(r) for r in rows]

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
        """pending -> sending, only while no earlier message to the same address is still
        on its way: order holds even with several processes delivering. A message held for
        later that was never tried (quiet hours) is not on its way: it does not hold back
        an urgent one."""
        return await self.db.execute(
            "UPDATE outbox SET status = 'sending', claimed_at = $2, attempts = attempts + 1"
            " WHERE id = $1 AND status = 'pending' AND next_attempt_at <= $2"
            " AND NOT EXISTS (SELECT 1 FROM outbox AS earlier"
            " WHERE earlier.channel = outbox.channel AND earlier.address = outbox.address"
            " AND earlier.id < outbox.id AND (earlier.status = 'sending'"
            " OR (earlier.status = 'pending'"
            " AND (earlier.attempts > 0 OR earlier.next_attempt_at <= $2))))",
            message_id, at) == 1

    async def mark_sent(self, message_id: int, channel_message_id: str | None,
                        at: datetime) -> None:
        await self.db.execute(
            "UPDATE outbox SET status = 'sent', sent_at = $2, channel_message_id = $3,"
            " last_error = NULL WHERE id = $1", message_id, at, channel_message_id)

    async def retry_at(self, message_id: int, when: datetime, error: str, *,
                       counts: bool = True) -> None:
        """Back to pending until `when`. `counts=False`: the channel only asked us to wait,
        so the try does not bring the message nearer to giving up (it is still a try: the
        message is on its way, and later ones to the same address stay behind it)."""
        await self.db.execute(
            "UPDATE outbox SET status = 'pending', next_attempt_at = $2, last_error = $3,"
            " waits = waits + $4 WHERE id = $1", message_id, when, error, 0 if counts else 1)

    async def dead(self, message_id: int, reason: str) -> None:
        await self.db.execute(
            "UPDATE outbox SET status = 'dead', last_error = $2 WHERE id = $1",
            message_id, reason)

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
            "UPDATE outbox SET status = 'dead', last_error = 'delivery outcome unknown:"
            " the process stopped while sending' WHERE status = 'sending'"
            " AND claimed_at < $1", older_than)

    async def latest_to(self, channel: str, address: str) -> OutboundMessage | None:
        """The newest message queued for the address (what the person last saw, or is about
        to): a bare "1" answers the prompt in it."""
        row = await self.db.fetchrow(
            "SELECT * FROM outbox WHERE channel = $1 AND address = $2 ORDER BY id DESC LIMIT 1",
            channel, address)
        return _message(row) if row else None

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


@dataclass
class DeliveryPolicy:
    max_attempts: int = 6
    base_delay: float = 2.0
    max_delay: float = 600.0
    poll_seconds: float = 1.0
    stale_sending_seconds: float = 120.0
    concurrency: int = 32
    batch: int = 200


class OutboxDeliverer:
    """Sends what is due. Messages to one address go in order: a message waiting for a retry
    holds back the later ones to that address."""

    def __init__(self, store: OutboxStore, senders: Mapping[str, ChannelSender], clock: Clock,
                 policy: DeliveryPolicy | None = None, *,
                 on_permanent: OnPermanent | None = None) -> None:
        self.store = store
        self.on_permanent = on_permanent
        self.senders = senders
        self.clock = clock
        self.policy = policy or DeliveryPolicy()
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(self.policy.concurrency)
        self._running = False

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        self._running = True
        if self.store.db.dialect == "sqlite":
            # The embedded database has one delivering process: whatever is `sending` at
            # start-up was left by a crash. (Several processes share Postgres instead, where a
            # claim is stale only after stale_sending_seconds.)
            await self.store.abandon_stale(self.clock.now() + timedelta(seconds=1))
        while self._running:
            try:
                await self.store.abandon_stale(
                    self.clock.now() - timedelta(seconds=self.policy.stale_sending_seconds))
                await self.deliver_due()
            except Exception:
                log.exception("outbox delivery round failed; trying again")
            try:
                await asyncio.wait_for(self._wake.wait(), self.policy.poll_seconds)
            except TimeoutError:
                pass
            self._wake.clear()

    def stop(self) -> None:
        self._running = False
        self._wake.set()

    async def deliver_due(self) -> int:
        """Everything due now, a batch at a time. Returns how many were sent or dead-lettered."""
        total = 0
        while True:
            due = await self.store.due(self.clock.now(), self.policy.batch)
            by_address: dict[tuple[str, str], list[OutboundMessage]] = {}
            for message in due:
                by_address.setdefault((message.channel, message.address), []).append(message)
            done = sum(await asyncio.gather(*[self._deliver_in_order(msgs)
                                              for msgs in by_address.values()]))
            total += done
            # A short batch: nothing more is due. A full one may hide more, unless nothing in
            # it moved (all held back behind earlier messages, or waiting for a retry).
            if len(due) < self.policy.batch or not done:
                return total

    async def _deliver_in_order(self, messages: list[OutboundMessage]) -> int:
        """How many of them are done with (sent or dead-lettered)."""
        done = 0
        async with self._slots:
            for message in messages:
                if not await self._deliver(message):
                    break  # later messages to this address wait their turn
                done += 1
        return done

    async def _deliver(self, message: OutboundMessage) -> bool:
        """True when it is done with (sent or dead); False when it waits for a retry."""
        if not await self.store.claim(message.id, self.clock.now()):
            return False  # another worker has it, or an earlier message is still going
        sender = self.senders.get(message.channel)
        if sender is None:
            await self.store.dead(message.id, f"no sender for channel {message.channel!r}")
            return True
        attempt = message.attempts + 1
        try:
            channel_id = await sender.send(message)
        except PermanentSendError as err:
            # Marked before the row settles: whoever waits for the outbox to go quiet then
            # also sees the address as unwritable.
            if self.on_permanent is not None and (err.unreachable or err.opted_out):
                await self.on_permanent(message, err)
            await self.store.dead(message.id, str(err))
            log.error("outbox %s dead: %s", message.id, err)
            return True
        except Exception as err:
            if not isinstance(err, TransientSendError):  # an adapter bug: retry, bounded
                log.exception("outbox %s: sender %s crashed", message.id, message.channel)
            return await self._later(message, attempt, err)
        await self.store.mark_sent(message.id, channel_id, self.clock.now())
        return True

    async def _later(self, message: OutboundMessage, attempt: int, err: Exception) -> bool:
        # "Wait N seconds" (Telegram's flood control) is not a failure: a burst of them must
        # not use up the attempts and drop the message.
        retry_after = getattr(err, "retry_after", None)
        if retry_after is None and attempt >= self.policy.max_attempts:
            await self.store.dead(message.id, f"gave up after {attempt} attempts: {err}")
            log.error("outbox %s dead after %s attempts: %s", message.id, attempt, err)
            return True
        # The channel said when (Telegram's retry_after): exactly then, neither earlier (it
        # would refuse again) nor later (the backoff, past max_delay too); else the backoff.
        delay = float(retry_after) if retry_after is not None else backoff_delay(
            attempt, base=self.policy.base_delay, cap=self.policy.max_delay)
        await self.store.retry_at(message.id, self.clock.now() + timedelta(seconds=delay),
                                  f"{type(err).__name__}: {err}", counts=retry_after is None)
        log.warning("outbox %s: send failed (%s); retry in %.1fs", message.id, err, delay)
        return False
