"""Events stored before they are acknowledged, and run from the table.

    publish   one INSERT (unique on the event's id: a sender's retry stores nothing new);
              `POST /events` answers 202 only after it, so an acknowledged event is durable
    dispatch  a dispatcher claims the oldest stored event (received -> processing, a
              compare-and-set: two dispatchers never take the same one), runs every matching
              handler (the trigger engine: one run per (task, event id), exactly once), then
              marks it done; a handler that fails gets the event again later (backoff), up to
              `max_attempts`, then the event is `failed` with the reason
    recovery  an event left `processing` by a dead process is claimed again (at start on
              SQLite, whose one process left it; after `stale_seconds` on Postgres); the
              engine's run key makes the second dispatch run nothing twice

Schedulers dispatch (any number: the claim decides); a web process only stores the event and
says so (`signals`, bot.work.control `event`), and every scheduler looks at the table at once
rather than at its next poll.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime, timedelta

from bot.contracts.clock import Clock
from bot.db import Database, Row
from bot.plumbing.background import cancel_and_wait
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.wake import woken
from bot.work.control import Signals
from triggers.events import Event, EventPattern, Handler

log = logging.getLogger(__name__)


class StoredEventBus:
    def __init__(self, db: Database, clock: Clock, *, max_attempts: int = 5,
                 retry_seconds: float = 1.0, stale_seconds: float = 120.0,
                 poll_seconds: float = 1.0, signals: Signals | None = None) -> None:
        self.db = db
        self.signals = signals if signals is not None and signals.shared else None
        if self.signals is not None:
            self.signals.listen("event", self._heard)
        self.clock = clock
        self.max_attempts = max_attempts
        self.retry_seconds = retry_seconds
        self.stale_seconds = stale_seconds
        self.poll_seconds = poll_seconds
        self._subscribers: list[tuple[EventPattern, Handler]] = []
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None

    def subscribe(self, pattern: EventPattern, handler: Handler) -> None:
        self._subscribers.append((pattern, handler))

    async def publish(self, event: Event) -> bool:
        """Store the event (durable when this returns); False when its id was stored
        before (nothing new: it runs once). It was received at `event.at` when given (an
        event kept in the spool while the database was away), else now."""
        now = self.clock.now()
        received = min(event.at, now) if event.at is not None else now
        seq = await self.db.fetchval(
            "INSERT INTO events (id, source, type, data, status, received_at, next_attempt_at)"
            " VALUES ($1, $2, $3, $4, 'received', $5, $5) ON CONFLICT (id) DO NOTHING"
            " RETURNING seq", event.id, event.source, event.type,
            json.dumps(dict(event.data), default=str), received)
        self._wake.set()
        if seq is not None and self.signals is not None:
            await self.signals.say("event")
        return seq is not None

    async def _heard(self, fields: dict[str, str]) -> None:
        self._wake.set()  # dispatched now if this process dispatches; else nothing

    async def start(self) -> None:
        if self._worker is not None:
            return
        if self.db.dialect == "sqlite":  # its one process left these: claim them again
            await self._release_stale(self.clock.now() + timedelta(seconds=1))
        self._worker = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            # An event cut short stays `processing`: it is claimed again.
            await cancel_and_wait(self._worker)
            self._worker = None

    async def drain(self) -> None:
        """Until every stored event is done or given up (tests; one-off runs)."""
        while True:
            await self.dispatch_due()
            waiting = await self.db.fetchval(
                "SELECT 1 FROM events WHERE status IN ('received', 'processing') LIMIT 1")
            if waiting is None:
                return
            await asyncio.sleep(0.01)

    async def dispatch_due(self) -> int:
        """Run every event due now, oldest first; how many were taken."""
        taken = 0
        while (row := await self._claim()) is not None:
            taken += 1
            await self._dispatch(row)
        return taken

    async def _run(self) -> None:
        while True:
            try:
                await self._release_stale(
                    self.clock.now() - timedelta(seconds=self.stale_seconds))
                await self.dispatch_due()
            except Exception:
                log.exception("event dispatch failed; trying again")
            await woken(self._wake, self.poll_seconds)
            self._wake.clear()

    async def _claim(self) -> Row | None:
        now = self.clock.now()
        return await self.db.fetchrow(
            "UPDATE events SET status = 'processing', claimed_at = $1, attempts = attempts + 1"
            " WHERE seq = (SELECT seq FROM events WHERE status = 'received'"
            " AND next_attempt_at <= $1 ORDER BY seq LIMIT 1) AND status = 'received'"
            " RETURNING *", now)

    async def _dispatch(self, row: Row) -> None:
        event = Event(source=row["source"], type=row["type"], data=json.loads(row["data"]),
                      id=row["id"], at=row["received_at"])
        try:
            for pattern, handler in list(self._subscribers):
                if pattern.matches(event):
                    await handler(event)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            await self._failed(row, f"{type(err).__name__}: {err}")
            return
        await self.db.execute(
            "UPDATE events SET status = 'done', done_at = $2, error = NULL WHERE seq = $1",
            row["seq"], self.clock.now())

    async def _failed(self, row: Row, reason: str) -> None:
        attempt = int(row["attempts"])
        if attempt >= self.max_attempts:
            log.error("event %s/%s (%s) failed %d times; given up: %s", row["source"],
                      row["type"], row["id"], attempt, reason)
            await self.db.execute(
                "UPDATE events SET status = 'failed', error = $2, done_at = $3 WHERE seq = $1",
                row["seq"], reason[:1000], self.clock.now())
            return
        delay = backoff_delay(attempt, base=self.retry_seconds, cap=300.0)
        log.warning("event %s failed (attempt %d): %s; again in %.1fs", row["id"], attempt,
                    reason, delay)
        await self.db.execute(
            "UPDATE events SET status = 'received', error = $2, next_attempt_at = $3"
            " WHERE seq = $1", row["seq"], reason[:1000],
            self.clock.now() + timedelta(seconds=delay))

    async def _release_stale(self, older_than: datetime) -> None:
        released = await self.db.execute(
            "UPDATE events SET status = 'received' WHERE status = 'processing'"
            " AND claimed_at < $1", older_than)
        if released:
            log.info("%d event(s) a stopped process was running are claimed again", released)

    async def count(self, status: str) -> int:
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM events WHERE status = $1", status) or 0)
