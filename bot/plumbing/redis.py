"""Redis, when configured (several processes share per-user locks through it): opened and
checked at start-up, so an unreachable server is one plain line, not a stuck message."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bot.text.redact import redact_url

REDIS_SCHEMES = ("redis", "rediss", "unix")
POOL_SIZE = 64  # connections a process holds at most (blocking reads take one each)
POOL_WAIT_SECONDS = 30.0  # how long a command waits for one before it is an error


class RedisUnavailable(Exception):
    """Redis cannot be reached or refused us: said in one line, with what to check."""


def redis_url_problem(url: str) -> str | None:
    """What is wrong with the form of a Redis URL, in plain words; None if it is usable."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError as err:
        return f"{redact_url(url)!r} is not a valid Redis URL ({err})"
    if parts.scheme not in REDIS_SCHEMES or "://" not in url:
        return (f"{redact_url(url)!r} is not a Redis URL: write redis://host:6379/0 "
                "(or rediss:// for TLS)")
    return None


async def open_redis(url: str, *, timeout: float = 5.0) -> Any:
    """A connected `redis.asyncio` client, after one PING; RedisUnavailable otherwise."""
    import redis.asyncio as redis_asyncio
    from redis.exceptions import RedisError

    problem = redis_url_problem(url)
    if problem:
        raise RedisUnavailable(f"Redis URL: {problem}")
    # A burst (a thousand webhooks at once) must wait for a free connection, not fail:
    # redis-py's default pool raises "Too many connections" past 100 in use.
    pool = redis_asyncio.BlockingConnectionPool.from_url(
        url, max_connections=POOL_SIZE, timeout=POOL_WAIT_SECONDS,
        socket_connect_timeout=timeout)
    client = redis_asyncio.Redis.from_pool(pool)
    try:
        await client.ping()
    except (RedisError, OSError) as err:
        await client.aclose()
        raise RedisUnavailable(
            f"cannot reach Redis at {redact_url(url)}: {err}; check that the server is "
            "running and reachable, and the password in VALET_REDIS_URL") from err
    return client
