"""A per-user Redis lease that is lost while a turn holds it stops that turn: it never goes on
unlocked beside the new holder, and the message is redone by whoever holds the lease next."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis_asyncio

from bot.config.policies import AccessSettings, ChannelAccess
from bot.gateway.locks import LockLost, RedisUserLocks
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming


@pytest.fixture
async def redis_client(redis_url):
    client = redis_asyncio.from_url(redis_url)
    yield client
    await client.aclose()


async def until(condition, *, tries: int = 500) -> None:
    """Wait (a bounded time, never an assertion on speed) until `condition()` is true."""
    for _ in range(tries):
        if await condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("gave up waiting")


async def test_a_stolen_lease_stops_the_holder_instead_of_letting_it_run_unlocked(
        redis_client):
    locks = RedisUserLocks(redis_client, ttl_seconds=0.3)
    entered, finished = asyncio.Event(), []

    async def slow_turn() -> None:
        async with locks.hold("alice"):
            entered.set()
            await asyncio.sleep(30)  # far longer than the lease
            finished.append("alice")

    turn = asyncio.create_task(slow_turn())
    await entered.wait()
    await redis_client.set("valet:userlock:alice", "another-process")  # the lease is gone
    with pytest.raises(LockLost):
        await asyncio.wait_for(turn, 10)
    assert finished == []
    # The thief's lease is not released by the stopped holder.
    assert await redis_client.get("valet:userlock:alice") == b"another-process"


async def test_an_ordinary_cancellation_stays_a_cancellation(redis_client):
    """Stopping the service cancels turns; that must not be mistaken for a lost lease."""
    locks = RedisUserLocks(redis_client, ttl_seconds=0.3)
    entered = asyncio.Event()

    async def slow_turn() -> None:
        async with locks.hold("bob"):
            entered.set()
            await asyncio.sleep(30)

    turn = asyncio.create_task(slow_turn())
    await entered.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert await redis_client.get("valet:userlock:bob") is None  # released


async def test_a_turn_whose_lease_expires_is_stopped_and_redone_once_by_the_next_holder(
        postgres_dsn, app_factory, redis_url, redis_client, fake_llm):
    access = AccessSettings(channels={"test": ChannelAccess(allow=["alice"])})
    app = await app_factory(database_url=postgres_dsn, redis_url=redis_url, access=access)
    app.gateway.deps.locks = RedisUserLocks(redis_client, ttl_seconds=0.3)
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    calls = 0

    async def respond(req):
        nonlocal calls
        calls += 1
        if calls == 1:  # the first attempt is slow: its lease is taken meanwhile
            await asyncio.sleep(3)
            return LLMReply(content="late answer from a turn that lost its lock")
        return LLMReply(content="Hello Alice!")

    fake_llm.responder = respond
    await app.gateway.receive(incoming("hi", address="alice"))

    async def first_call_under_way() -> bool:
        return calls == 1

    await until(first_call_under_way)
    user = await app.identities.resolve("test", "alice")
    # Another process takes the user's lease (ours could not be renewed in time); it holds
    # it for a second, long enough for ours to notice, then lets it lapse.
    await redis_client.set(f"valet:userlock:{user.id}", "another-process", px=1000)

    async def replied() -> bool:
        return bool(sender.sent) and not app.gateway._drains

    await until(replied)
    await app.gateway.wait_idle()
    assert sender.sent == [("alice", "Hello Alice!")]
    assert calls == 2
    [row] = await app.db.fetch("SELECT status, attempts FROM inbox")
    assert (row["status"], row["attempts"]) == ("done", 2)
