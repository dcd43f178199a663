"""The work stream: stored messages handed to whichever worker is free, through Redis Streams.

    announce   whoever stored a person's inbox row (a web process, the scheduler's run, a
               worker) adds an entry naming the person and the row: XADD valet:work
    claim      each worker reads new entries for its consumer group (XREADGROUP); an entry
               kicks that person's drain in this worker (one turn at a time per person: the
               Redis user lock; messages in order: the drain claims the person's oldest row)
    ack        an entry is acknowledged (XACK) only once the person's drain found nothing of
               theirs left, so its row is closed (answered, steered or failed)
    keep       every `claim_idle / 3` a worker touches the entries it holds (XCLAIM JUSTID):
               a long turn is never taken for a dead worker's
    take over  entries idle longer than `claim_idle` belong to a dead worker: XAUTOCLAIM moves
               them here and they are worked as new ones (the user lock's lease, left by the
               dead worker, runs out first; the row it left `processing` is redone from its
               journal)
    lost Redis reading fails: the worker stops claiming, says so once, tries again with a
               backoff and says when it claims again. Nothing acknowledged is lost: the rows
               are in the database and the scan (bot.gateway.sweep) finds those no entry names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable
from typing import Any

from bot.plumbing.backoff import backoff_delay

log = logging.getLogger(__name__)

STREAM = "valet:work"
GROUP = "workers"
MAX_ENTRIES = 200_000  # the stream is trimmed (approximately) past this: rows stay the truth
Kick = Callable[[str], None]


def consumer_name() -> str:
    """This process among the group's consumers, as an operator reads it (XINFO CONSUMERS)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class WorkStream:
    """The stream's two sides: `announce` (anyone) and `run` (a worker)."""

    def __init__(self, redis: Any, *, claim_idle_seconds: float = 4.0,
                 block_seconds: float = 1.0, batch: int = 100, stream: str = STREAM,
                 group: str = GROUP, consumer: str | None = None) -> None:
        self.redis = redis
        self.stream = stream
        self.group = group
        self.consumer = consumer or consumer_name()
        self.claim_idle_ms = int(claim_idle_seconds * 1000)
        self.block_ms = int(block_seconds * 1000)
        self.batch = batch
        self.claiming = False  # reading the stream now (readiness, metrics)
        self._held: dict[str, list[str]] = {}  # person -> entries not yet acknowledged
        self._acks: asyncio.Queue[list[str]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._kick: Kick | None = None

    # --- any process ---------------------------------------------------------------------

    async def announce(self, user_id: str, row_id: int) -> None:
        """This person has a stored row to work on. Raises if Redis is away: the caller logs
        it and goes on (the row is stored; a worker's scan finds it)."""
        await self.redis.xadd(self.stream, {"u": user_id, "r": str(row_id)},
                              maxlen=MAX_ENTRIES, approximate=True)

    # --- a worker --------------------------------------------------------------------------

    async def start(self, kick: Kick) -> None:
        self._kick = kick
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._keep()),
                       asyncio.create_task(self._acknowledge())]

    async def stop(self) -> None:
        """Claim no more. What this worker holds stays pending in the group: another worker
        takes it over once it has been idle `claim_idle`."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self.claiming = False

    def drained(self, user_id: str) -> None:
        """The person's drain found nothing left of theirs: every entry it held for them
        names a closed row. Synchronous (the drain's exit may not wait): acknowledged by a
        background task."""
        held = self._held.pop(user_id, None)
        if held:
            self._acks.put_nowait(held)

    def held(self) -> int:
        return sum(len(ids) for ids in self._held.values())

    async def _ensure_group(self) -> None:
        from redis.exceptions import ResponseError

        try:
            await self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    def _take(self, entries: list[Any]) -> None:
        assert self._kick is not None
        for entry_id, fields in entries:
            if fields is None:  # trimmed away while pending: the sweep covers its row
                continue
            user = _text(fields.get(b"u", fields.get("u", b"")))
            if not user:
                continue
            self._held.setdefault(user, []).append(_text(entry_id))
            self._kick(user)

    async def _read(self) -> None:
        failures = 0
        while True:
            try:
                if not self.claiming:
                    await self._ensure_group()
                    await self._take_over()
                answer = await self.redis.xreadgroup(
                    self.group, self.consumer, {self.stream: ">"}, count=self.batch,
                    block=self.block_ms)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                failures += 1
                if self.claiming or failures == 1:
                    log.error("lost Redis (%s): this worker claims no work until it answers "
                              "again; stored messages wait in the database", err)
                self.claiming = False
                await asyncio.sleep(backoff_delay(failures, base=0.5, cap=10.0))
                continue
            if not self.claiming:
                log.info("work stream: claiming as %s", self.consumer)
                if failures:
                    log.warning("Redis answers again: this worker claims work again")
                self.claiming, failures = True, 0
            for _stream, entries in answer or []:
                self._take(entries)

    async def _keep(self) -> None:
        """Touch what this worker holds; take over what a dead one held."""
        while True:
            await asyncio.sleep(self.claim_idle_ms / 3000)
            if not self.claiming:
                continue
            try:
                held = [i for ids in self._held.values() for i in ids]
                if held:
                    await self.redis.xclaim(self.stream, self.group, self.consumer, 0, held,
                                            justid=True)
                await self._take_over()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the reader says it when Redis is away
                log.debug("work stream upkeep failed: %s", err)

    async def _take_over(self, rounds: int = 10) -> None:
        start = "0-0"
        for _ in range(rounds):  # bounded: at most rounds x batch entries per pass
            answer = await self.redis.xautoclaim(
                self.stream, self.group, self.consumer, self.claim_idle_ms, start_id=start,
                count=self.batch)
            start, entries = _text(answer[0]), answer[1]
            if entries:
                log.info("work stream: took over %d entr%s a stopped worker held",
                         len(entries), "y" if len(entries) == 1 else "ies")
                self._take(entries)
            if start == "0-0":
                return

    async def _acknowledge(self) -> None:
        while True:
            ids = await self._acks.get()
            while not self._acks.empty():
                ids += self._acks.get_nowait()
            for attempt in range(1, 6):
                try:
                    await self.redis.xack(self.stream, self.group, *ids)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    # Unacknowledged entries are taken over later and find their rows
                    # closed: a wasted look, never a second answer.
                    log.debug("work stream: XACK failed (%s), try %d", err, attempt)
                    await asyncio.sleep(backoff_delay(attempt, base=0.2, cap=5.0))
