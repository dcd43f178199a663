"""Redis, when configured (several processes share per-user locks through it): opened and
checked at start-up, so an unreachable server is one plain line, not a stuck message."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bot.redact import redact_url

REDIS_SCHEMES = ("redis", "rediss", "unix")


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
    client = redis_asyncio.from_url(url, socket_connect_timeout=timeout)
    try:
        await client.ping()
    except (RedisError, OSError) as err:
        await client.aclose()
        raise RedisUnavailable(
            f"cannot reach Redis at {redact_url(url)}: {err}; check that the server is "
            "running and reachable, and the password in VALET_REDIS_URL") from err
    return client
