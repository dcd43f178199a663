"""One scheduler leads at a time: a lease row in the shared database.

The leader renews its lease well before it runs out; when the leader stops it lets the lease
go, and when it dies the lease simply expires, so another process takes over within
`ttl` (45 s by default: "within a minute"). The lease decides who does the work; the unique run
key is what makes a brief overlap (a paused leader waking up late) harmless.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.db import Database

SCHEDULER_LEASE = "trigger-scheduler"


class DatabaseLease:
    def __init__(self, db: Database, holder: str, *, name: str = SCHEDULER_LEASE,
                 ttl: timedelta = timedelta(seconds=45)) -> None:
        self.db = db
        self.holder = holder
        self.name = name
        self.ttl = ttl

    async def acquire(self, now: datetime) -> bool:
        """Take or renew the lease; True while this holder leads."""
        holder = await self.db.fetchval(
            "INSERT INTO trigger_leases (name, holder, expires_at) VALUES ($1, $2, $3)"
            " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            " expires_at = excluded.expires_at"
            " WHERE trigger_leases.holder = excluded.holder OR trigger_leases.expires_at <= $4"
            " RETURNING holder", self.name, self.holder, now + self.ttl, now)
        return holder == self.holder

    async def release(self) -> None:
        await self.db.execute("DELETE FROM trigger_leases WHERE name = $1 AND holder = $2",
                              self.name, self.holder)

    async def current(self) -> tuple[str, datetime] | None:
        """Who holds the lease and until when (it may have lapsed); None: nobody took it."""
        row = await self.db.fetchrow(
            "SELECT holder, expires_at FROM trigger_leases WHERE name = $1", self.name)
        return (str(row["holder"]), row["expires_at"]) if row else None
