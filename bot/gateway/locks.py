"""One turn at a time per user. In one process an asyncio lock per user is enough; several
processes share a Redis lock (see `RedisUserLocks`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, Protocol

from bot.plumbing.background import cancel_and_wait

log = logging.getLogger(__name__)


class UserLocks(Protocol):
    def hold(self, user_id: str) -> contextlib.AbstractAsyncContextManager[None]: ...


class LocalUserLocks:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def hold(self, user_id: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(user_id, asyncio.Lock())
        self._users[user_id] = self._users.get(user_id, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[user_id] -= 1
            if not self._users[user_id]:  # forget idle users: memory stays flat
                del self._users[user_id]
                del self._locks[user_id]


# Release only if we still own it; extend only if we still own it.
_RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
            "return redis.call('del', KEYS[1]) else return 0 end")
_EXTEND = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end")


class LockLost(Exception):
    """The per-user lease was lost while held (it expired, or another process took it): the
    holder was stopped. Its inbox row stays `processing`, so the next holder redoes it."""


class RedisUserLocks:
    """A lease in Redis (SET NX PX) renewed while held, so a crashed process's lock expires
    and another process takes the user's queue over. A holder whose lease is lost is stopped
    (its task cancelled, LockLost raised from `hold`) rather than going on unlocked next to the
    new holder."""

    def __init__(self, redis: Any, *, ttl_seconds: float = 30.0, poll_seconds: float = 0.05,
                 prefix: str = "valet:userlock:") -> None:
        self.redis = redis
        self.ttl_ms = int(ttl_seconds * 1000)
        self.poll = poll_seconds
        self.prefix = prefix

    @contextlib.asynccontextmanager
    async def hold(self, user_id: str) -> AsyncIterator[None]:
        key, token = self.prefix + user_id, uuid.uuid4().hex
        # Polling: another process holds it, and Redis has no wake-up for us.
        while not await self.redis.set(key, token, nx=True, px=self.ttl_ms):  # noqa: ASYNC110
            await asyncio.sleep(self.poll)
        holder = asyncio.current_task()
        assert holder is not None
        lost = asyncio.Event()
        renew = asyncio.create_task(self._renew(key, token, holder, lost))
        try:
            yield
        except asyncio.CancelledError:
            # Our own cancellation (lease lost) becomes LockLost; anyone else's stays a
            # cancellation.
            if lost.is_set() and holder.uncancel() == 0:
                raise LockLost(f"lost the lock {key} while holding it; the turn was stopped"
                               ) from None
            raise
        finally:
            await cancel_and_wait(renew)
            try:
                await self.redis.eval(_RELEASE, 1, key, token)
            except Exception:  # not fatal: an unreleased lease expires by itself
                log.warning("releasing the lock %s failed", key, exc_info=True)

    async def _renew(self, key: str, token: str, holder: asyncio.Task[Any],
                     lost: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        renewed_at = loop.time()
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            try:
                extended = await self.redis.eval(_EXTEND, 1, key, token, self.ttl_ms)
            except Exception:
                if loop.time() - renewed_at < self.ttl_ms / 1000:  # the lease has slack
                    log.warning("renewing the lock %s failed; retrying", key, exc_info=True)
                    continue
                extended = 0  # unreachable for a whole lease: someone else may hold it now
            if extended:
                renewed_at = loop.time()
            else:
                log.error("lost the lock %s while holding it; stopping its turn", key)
                lost.set()
                holder.cancel()
                return
