"""A database whose server was not there when `valet serve` started: the process starts
anyway, and reaches it later.

After a reboot Postgres may come up after Valet, and a restart during an outage would
otherwise exit (and lose the texts Twilio sends meanwhile: it does not send an inbound
webhook again). `PendingDatabase` stands for the database from the first second: every
statement raises `DatabaseUnavailable` (what the webhooks' spool, the pollers and the log's
once-a-minute line already recognise: bot.plumbing.outages) until `reach()` has opened it
(migrations applied or checked, as `open` does); from then on it is the database itself.

`reach()` tries `open` again with a growing wait (1 s doubling to `max_wait_seconds`), telling
each failure at WARNING with `extra=about("database")`: the log shows one line a minute.
Only a server that is not there is waited for (refused, unreachable, starting up, shutting
down, timed out); anything else (a wrong password, a database that does not exist, a schema
ahead of the code) is an operator's to fix, and raised at once as `open` raised it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from bot.db.port import Database, DatabaseUnavailable, Queries, Row
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.outages import DATABASE, about, recovered

log = logging.getLogger(__name__)


def server_not_there(err: BaseException) -> bool:
    """`open` failed because the server cannot be reached now (worth waiting for), as
    opposed to a mistake of the configuration (wrong password, no such database)."""
    from bot.db.migrate import SchemaAhead, SchemaBehind

    if isinstance(err, SchemaAhead | SchemaBehind):
        return False
    seen = 0
    cause: BaseException | None = err
    while cause is not None and seen < 8:
        if isinstance(cause, OSError | TimeoutError | asyncpg.CannotConnectNowError
                      | asyncpg.ConnectionDoesNotExistError
                      | asyncpg.exceptions.OperatorInterventionError):
            return True
        if isinstance(cause, asyncpg.InterfaceError) and "closed" in str(cause):
            return True
        cause = cause.__cause__
        seen += 1
    return False


class PendingDatabase:
    """The Database port before (and after) its server is reached; see the module."""

    def __init__(self, open_database: Callable[[], Awaitable[Database]], *, dialect: str,
                 first_error: DatabaseUnavailable, first_wait_seconds: float = 1.0,
                 max_wait_seconds: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.dialect = dialect
        self._open = open_database
        self._db: Database | None = None
        self.error: DatabaseUnavailable | None = first_error  # why it is not reached yet
        self.first_wait_seconds = first_wait_seconds
        self.max_wait_seconds = max_wait_seconds
        self._clock = clock
        self.since = clock()
        self.attempts = 1
        self._closed = False

    @property
    def reached(self) -> bool:
        return self._db is not None

    def waiting_for(self) -> str | None:
        """Why the database is not there yet, in one line (/readyz); None once reached."""
        if self._db is not None or self.error is None:
            return None
        return (f"not reached since start-up ({self._clock() - self.since:.0f}s, "
                f"{self.attempts} tries): {self.error}")

    async def reach(self) -> Database:
        """Open it, trying again until its server is there (raised: anything that is not a
        server away, see the module)."""
        while self._db is None:
            wait = backoff_delay(self.attempts, base=self.first_wait_seconds,
                                 cap=self.max_wait_seconds)
            log.warning("database: %s; trying again in %.0fs", self.error, wait,
                        extra=about(DATABASE))
            await asyncio.sleep(wait)
            if self._closed:
                raise DatabaseUnavailable("closed before the database was reached")
            self.attempts += 1
            try:
                db = await self._open()
            except DatabaseUnavailable as err:
                if not server_not_there(err):
                    raise
                self.error = err
                continue
            if self._closed:  # closed while it opened
                await db.close()
                raise DatabaseUnavailable("closed before the database was reached")
            self._db, self.error = db, None
            log.info("database: reached after %.0fs and %d tries",
                        self._clock() - self.since, self.attempts)
            recovered(DATABASE)
        return self._db

    def _now(self) -> Database:
        if self._db is None:
            raise DatabaseUnavailable(str(self.error) if self.error else "not reached yet")
        return self._db

    async def execute(self, sql: str, *args: Any) -> int:
        return await self._now().execute(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return await self._now().fetch(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        return await self._now().fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._now().fetchval(sql, *args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Queries]:
        async with self._now().transaction() as queries:
            yield queries

    async def close(self) -> None:
        self._closed = True
        if self._db is not None:
            await self._db.close()
