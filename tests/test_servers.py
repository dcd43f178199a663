"""Smoke tests for the throwaway PostgreSQL / Redis fixtures (tests/server_fixtures.py)."""

from __future__ import annotations

import asyncpg
import pytest
import redis.asyncio as aioredis

from tests.servers import ThrowawayPostgres, ThrowawayRedis


async def test_postgres_select_one(postgres_dsn: str) -> None:
    conn = await asyncpg.connect(postgres_dsn)
    try:
        assert await conn.fetchval("SELECT 1") == 1
        dbname = await conn.fetchval("SELECT current_database()")
        assert postgres_dsn.endswith(f"/{dbname}")
        assert dbname.startswith("t_")
    finally:
        await conn.close()


@pytest.mark.parametrize("marker", ["first", "second"])
async def test_postgres_database_per_test(postgres_dsn: str, marker: str) -> None:
    # Both parametrized tests create the same table with plain CREATE TABLE;
    # the second one would fail with DuplicateTableError if they shared a DB.
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute("CREATE TABLE isolation_probe (marker text NOT NULL)")
        await conn.execute("INSERT INTO isolation_probe VALUES ($1)", marker)
        assert await conn.fetch("SELECT marker FROM isolation_probe") == [(marker,)]
    finally:
        await conn.close()


async def test_postgres_two_databases_are_isolated(postgres_server: ThrowawayPostgres) -> None:
    dsn_a = postgres_server.create_database("isolation_a")
    dsn_b = postgres_server.create_database("isolation_b")
    try:
        conn_a = await asyncpg.connect(dsn_a)
        conn_b = await asyncpg.connect(dsn_b)
        try:
            await conn_a.execute("CREATE TABLE widgets (id int)")
            await conn_a.execute("INSERT INTO widgets VALUES (1), (2)")
            await conn_b.execute("CREATE TABLE widgets (id int)")
            assert await conn_a.fetchval("SELECT count(*) FROM widgets") == 2
            assert await conn_b.fetchval("SELECT count(*) FROM widgets") == 0
        finally:
            await conn_a.close()
            await conn_b.close()
    finally:
        postgres_server.drop_database("isolation_a")
        postgres_server.drop_database("isolation_b")


async def test_postgres_dsn_dropped_with_open_connection(
    postgres_server: ThrowawayPostgres,
) -> None:
    # drop_database uses WITH (FORCE), so a connection a test forgot to close
    # must not make teardown fail.
    dsn = postgres_server.create_database("leaky")
    conn = await asyncpg.connect(dsn)
    postgres_server.drop_database("leaky")
    with pytest.raises((asyncpg.PostgresError, asyncpg.InterfaceError, ConnectionError)):
        await conn.fetchval("SELECT 1")
    conn.terminate()


async def test_redis_ping(redis_url: str) -> None:
    client = aioredis.from_url(redis_url)
    try:
        assert await client.ping() is True
    finally:
        await client.aclose()


@pytest.mark.parametrize("value", ["first", "second"])
async def test_redis_set_get_and_clean_between_tests(redis_url: str, value: str) -> None:
    client = aioredis.from_url(redis_url, decode_responses=True)
    try:
        assert await client.dbsize() == 0  # previous test's key was flushed
        await client.set("greeting", value)
        assert await client.get("greeting") == value
    finally:
        await client.aclose()


def test_a_paused_postgres_refuses_connections_and_resumes_on_its_port(
    own_postgres: ThrowawayPostgres,
) -> None:
    import asyncio
    import socket

    server = own_postgres  # the fixture skips, naming the package, where there is none
    try:
        dsn = server.create_database("paused")
        port = server.port
        server.pause()
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        server.resume()
        assert server.port == port

        async def select() -> int:
            conn = await asyncpg.connect(dsn)
            try:
                return int(await conn.fetchval("SELECT 1"))
            finally:
                await conn.close()

        assert asyncio.run(select()) == 1
    finally:
        server.stop()


def test_a_paused_redis_refuses_connections_and_resumes_on_its_port(
    own_redis: ThrowawayRedis,
) -> None:
    import socket

    server = own_redis
    try:
        port = server.port
        server.pause()
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
        server.resume()
        assert server.port == port and server.command("PING").startswith(b"+PONG")
    finally:
        server.stop()
