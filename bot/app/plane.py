"""The work plane of one process: how its work and signals reach the others.

Without Redis (SQLite, or one process on Postgres): asyncio locks per person, signals are
calls, every stored row is run by this process. With Redis: the per-person lock is a Redis
lease, signals go over pub/sub (bot.work.control), and a `valet serve` process hands its
stored rows to the work stream (bot.work.streams) for whichever worker is free. Other commands
(`valet chat`, `valet tasks`) share the locks and say their signals (a task added from a shell
reaches the scheduler at once) but run their own turns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.config import Settings
from bot.gateway.locks import LocalUserLocks, RedisUserLocks, UserLocks
from bot.work.control import LocalSignals, RedisSignals, Signals
from bot.work.relay import Relay
from bot.work.streams import WorkStream


@dataclass
class Plane:
    locks: UserLocks
    signals: Signals
    stream: WorkStream | None = None  # a serving process with Redis
    relay: Relay | None = None
    redis: Any = None
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def close(self) -> None:
        for closer in self.closers:
            await closer()


async def build_plane(settings: Settings, *, serving: bool = False) -> Plane:
    """RedisUnavailable (one line at start-up) when Redis is configured and cannot be
    reached."""
    if not settings.redis_url:
        return Plane(LocalUserLocks(), LocalSignals())
    from bot.plumbing.redis import open_redis

    client = await open_redis(settings.redis_url)
    signals = RedisSignals(client)
    locks = RedisUserLocks(client, ttl_seconds=settings.gateway.user_lock_ttl_seconds)
    plane = Plane(locks, signals, redis=client, closers=[signals.stop, client.aclose])
    if serving:
        plane.stream = WorkStream(client,
                                  claim_idle_seconds=settings.gateway.claim_idle_seconds)
        plane.relay = Relay(plane.stream, signals)
    return plane
