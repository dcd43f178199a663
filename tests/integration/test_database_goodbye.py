"""A pooled connection that heard the server's goodbye is never used again.

When Postgres stops (`pg_ctl stop -m fast`) or ends a session, each connection gets an
ErrorResponse (FATAL 57P01) and then the socket closes. On a busy machine the process may read
the message before it notices the close: asyncpg's idle connection then sits in the pool, open
and out of step with its server, and the next statement on it failed with asyncpg's
`InternalClientError: cannot switch to state 11; another operation (2) is in progress` — not
`DatabaseUnavailable`, so the callers that carry on through an outage (the webhooks' spool,
the deliverer's scan) took it for a bug, and the connection went back to the pool for the next
statement to fail the same way.

A relay between Valet and a real Postgres passes the server's bytes on at once and holds back
the close: that moment, made to last."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from bot.db.port import DatabaseUnavailable
from bot.db.postgres import PostgresDatabase
from tests.helpers import until


class LateGoodbye:
    """A TCP relay to the server whose closes reach the client only when `release()` says."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.server_closed = 0  # connections whose server side has ended
        self._held = asyncio.Event()
        self._listener: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._listener = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return int(self._listener.sockets[0].getsockname()[1])

    def release(self) -> None:
        self._held.set()

    async def close(self) -> None:
        self.release()
        if self._listener is not None:
            self._listener.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _relay(self, client_in: asyncio.StreamReader,
                     client_out: asyncio.StreamWriter) -> None:
        server_in, server_out = await asyncio.open_connection(self.host, self.port)
        up = asyncio.create_task(self._pump(client_in, server_out))
        self._tasks.add(up)
        try:
            await self._pump(server_in, client_out, hold_close=True)
        finally:
            up.cancel()
            server_out.close()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *,
                    hold_close: bool = False) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        if hold_close:
            self.server_closed += 1
            await self._held.wait()
        sink.close()


def _via(dsn: str, port: int) -> str:
    parts = urlsplit(dsn)
    userinfo = parts.netloc.rpartition("@")[0]
    return urlunsplit(parts._replace(netloc=f"{userinfo}@127.0.0.1:{port}" if userinfo
                                     else f"127.0.0.1:{port}"))


async def _settle() -> None:
    """Let the event loop read what the relay has written (loopback delivers at once: a few
    turns of the loop, no waiting for time)."""
    for _ in range(20):
        await asyncio.sleep(0)


@asynccontextmanager
async def goodbye_heard(postgres_dsn: str) -> AsyncIterator[tuple[PostgresDatabase, int]]:
    """A pool of one connection, through the relay, whose session the server has just ended:
    its goodbye read, its close held back. Yields (the database, the ended session's pid)."""
    target = urlsplit(postgres_dsn)
    relay = LateGoodbye(target.hostname or "127.0.0.1", target.port or 5432)
    db = await PostgresDatabase.open(_via(postgres_dsn, await relay.start()), pool_size=1)
    admin = await asyncpg.connect(postgres_dsn)
    try:
        pid = await db.fetchval("SELECT pg_backend_pid()")
        # The server ends the session (as a fast shutdown does): FATAL, then its socket closes.
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
        await until(lambda: relay.server_closed == 1, "the server closed the session")
        await _settle()  # the goodbye is read; the close is not
        yield db, pid
    finally:
        await admin.close()
        relay.release()
        await db.close()
        await relay.close()


async def test_a_connection_that_heard_the_servers_goodbye_is_unavailable_then_replaced(
        postgres_dsn: str) -> None:
    async with goodbye_heard(postgres_dsn) as (db, pid):
        with pytest.raises(DatabaseUnavailable):
            await db.fetchval("SELECT 1")
        # The pool's one connection was that one: it is not handed out again.
        assert await db.fetchval("SELECT 1") == 1
        assert await db.fetchval("SELECT pg_backend_pid()") != pid


async def test_inside_a_transaction_the_same_is_unavailable(postgres_dsn: str) -> None:
    async with goodbye_heard(postgres_dsn) as (db, _pid):
        with pytest.raises(DatabaseUnavailable):
            async with db.transaction() as tx:
                await tx.fetchval("SELECT 1")
        async with db.transaction() as tx:
            assert await tx.fetchval("SELECT 1") == 1
