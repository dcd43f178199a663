"""Signals between processes: said once, heard at once by every process that listens.

    stop         {user, row}        /stop for the person's running turn, wherever it runs
    steer        {user, row, text}  a message that may join the person's running turn
    tasks        {}                 the tasks changed: the scheduler rebuilds its wake-up
    run_now      {task, reply}      run a task now; the leader answers on the `reply` list
                                    (`ask` and `answer`: `valet tasks run-now` on any machine)
    event        {}                 an event was stored: the scheduler dispatches now
    wake         {channel, address} something was queued for an address: deliver now

`LocalSignals` calls the listeners in this process (one process, SQLite or no Redis);
`RedisSignals` publishes on a Redis pub/sub channel that every process subscribes to. A signal
is a wake-up, never the only copy of anything: one lost (no listener, Redis away) costs a
wait (the scheduler's heartbeat, the delivery scan, the turn's own end), never a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from bot.plumbing.background import cancel_and_wait
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.outages import REDIS, about, recovered
from bot.plumbing.wake import woken

log = logging.getLogger(__name__)

CHANNEL = "valet:signals"
Listener = Callable[[dict[str, str]], Awaitable[None]]


class Signals(Protocol):
    def listen(self, kind: str, listener: Listener) -> None: ...

    async def say(self, kind: str, **fields: str) -> None: ...

    @property
    def shared(self) -> bool:
        """True when other processes hear what this one says."""
        ...


class _Listeners:
    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}

    def listen(self, kind: str, listener: Listener) -> None:
        self._listeners.setdefault(kind, []).append(listener)

    async def hear(self, kind: str, fields: dict[str, str]) -> None:
        for listener in self._listeners.get(kind, []):
            try:
                await listener(fields)
            except Exception:
                log.warning("a listener to %r signals failed", kind, exc_info=True)


class LocalSignals(_Listeners):
    """One process: a signal is a call."""

    shared = False

    async def say(self, kind: str, **fields: str) -> None:
        await self.hear(kind, fields)


class RedisSignals(_Listeners):
    """Every process subscribes to one pub/sub channel; each hears every signal (its own too)
    and acts on those it has a listener for."""

    shared = True

    def __init__(self, redis: Any, channel: str = CHANNEL) -> None:
        super().__init__()
        self.redis = redis
        self.channel = channel
        self._task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._hearing: set[asyncio.Task[None]] = set()

    async def say(self, kind: str, **fields: str) -> None:
        try:
            await self.redis.publish(self.channel, json.dumps({"kind": kind, **fields}))
        except Exception as err:  # a wake-up lost: the heartbeat or a scan does it later
            log.warning("signal %s not sent (Redis: %s)", kind, err, extra=about(REDIS))

    async def ask(self, kind: str, timeout: float, **fields: str) -> dict[str, str] | None:
        """Say a signal that one listener answers (`answer`), and wait for that answer up to
        `timeout` seconds; None when nobody answered."""
        reply = f"valet:answer:{uuid.uuid4().hex}"
        await self.redis.publish(self.channel, json.dumps({"kind": kind, "reply": reply,
                                                           **fields}))
        answered = await self.redis.blpop([reply], timeout=timeout)
        if not answered:
            return None
        return {str(k): str(v) for k, v in json.loads(answered[1]).items()}

    async def answer(self, reply: str, **fields: str) -> None:
        await self.redis.rpush(reply, json.dumps(fields))
        await self.redis.expire(reply, 120)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._listen())
            await woken(self._subscribed, 5.0)  # Redis away: listening starts later

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _listen(self) -> None:
        failures = 0
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                self._subscribed.set()
                if failures:
                    log.warning("Redis answers again: signals are heard again")
                    recovered(REDIS)
                failures = 0
                async for message in pubsub.listen():
                    await self._dispatch(message)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                failures += 1
                if failures == 1:
                    log.warning("lost Redis (%s): signals from other processes are not "
                                "heard until it answers again", err,
                                extra=about(REDIS))  # one line a minute (bot.plumbing.outages)
                await asyncio.sleep(backoff_delay(failures, base=0.5, cap=10.0))
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("type") != "message":
            return
        try:
            data = json.loads(message["data"])
            kind = str(data.pop("kind"))
        except (ValueError, KeyError, TypeError):
            log.warning("an unreadable signal was ignored")
            return
        # Each on its own: a slow listener (a run-now) holds no other signal.
        task = asyncio.create_task(self.hear(kind, {k: str(v) for k, v in data.items()}))
        self._hearing.add(task)
        task.add_done_callback(self._hearing.discard)
