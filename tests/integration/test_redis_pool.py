"""A burst wider than Redis's connection pool waits for a free connection instead of failing
(redis-py's default pool raises "Too many connections" past its size)."""

from __future__ import annotations

import asyncio

from bot.plumbing.redis import POOL_SIZE, open_redis


async def test_a_burst_wider_than_the_pool_waits_and_every_command_succeeds(redis_url):
    # The burst opens the pool's 64 connections at once: at load 15 a connect took past the
    # 5 s default bound (a TimeoutError, not what this checks), so the bound is generous.
    client = await open_redis(redis_url, timeout=60.0)
    try:
        # Each command holds a connection for 50 ms: more at once than the pool has.
        burst = [client.blpop(["valet-test-empty"], timeout=0.05) for _ in range(POOL_SIZE * 3)]
        answers = await asyncio.gather(*burst, return_exceptions=True)
        assert [a for a in answers if isinstance(a, BaseException)] == []
        assert await client.ping()
    finally:
        await client.aclose()
