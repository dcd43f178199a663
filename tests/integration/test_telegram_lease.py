"""One poller per bot token: the lease a process must hold to poll Telegram."""

from __future__ import annotations

import redis.asyncio as redis_asyncio

from channels.telegram.lease import FileLease, RedisLease, lease_file


async def test_with_redis_one_process_polls_and_another_takes_over_when_it_stops(redis_url):
    client = redis_asyncio.from_url(redis_url)
    try:
        first = RedisLease(client, "valet:test:poller", ttl_seconds=30)
        second = RedisLease(client, "valet:test:poller", ttl_seconds=30)
        assert await first.acquire()
        assert not await second.acquire()
        assert await first.acquire()  # renewing keeps it
        await second.release()  # not the holder: changes nothing
        assert not await second.acquire()
        await first.release()
        assert await second.acquire()
        await second.release()
    finally:
        await client.aclose()


async def test_a_lost_redis_lease_is_noticed_at_renewal(redis_url):
    client = redis_asyncio.from_url(redis_url)
    try:
        lease = RedisLease(client, "valet:test:poller2", ttl_seconds=30)
        assert await lease.acquire()
        await client.set("valet:test:poller2", "someone else")  # expired and taken meanwhile
        assert not await lease.acquire()
        await client.delete("valet:test:poller2")
    finally:
        await client.aclose()


async def test_without_redis_a_file_lock_beside_the_database(tmp_path):
    path = lease_file(f"sqlite:///{tmp_path}/valet.db", "123456:SECRET")
    assert path == tmp_path / "telegram-poller-123456.lock"  # the bot id, never the token
    first, second = FileLease(path), FileLease(path)
    assert await first.acquire() and not await second.acquire()
    await first.release()
    assert await second.acquire()
    await second.release()
