"""What the owner hears of strangers asking to be let in: at most one message per
`pairing.notice_minutes`.

The first request after a quiet spell is told at once (with its card: a button on Telegram);
requests made while the owner was told recently wait, and the next message gathers them: how
many asked, each one still waiting with its code (the owner answers by code), and how to list
them all. Whoever sends a notice first takes the window with a compare-and-set
(`owner_notices`), and claims the requests it tells of (`pairing_requests.noticed_at`) in the
same transaction as the message is queued, so two processes never tell the same request and a
crash tells it later rather than never. A request made while the window is closed is told by
the workers' `run` loop the moment the window opens (it waits for that instant, not for its
next round), so every request is told within `pairing.notice_minutes` of being made. A
window is taken only by a message that goes: requests decided or expired before they were
told are marked told without one, and the count a message gives is the list it shows.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.contracts.clock import Clock
from bot.contracts.envelopes import ApprovalPrompt
from bot.db import Database
from bot.gateway.outbound import Outbound
from bot.people.access import PairingRequest, pairing_prompt, pairing_request, who_asks
from persona.lines import fill
from persona.lines_people import AccessLines

log = logging.getLogger(__name__)

KIND = "pairing"


class _WindowClosed(Exception):
    """The owner was told recently: the requests stay untold (the transaction rolls back)."""


class PairingNotices:
    def __init__(self, db: Database, clock: Clock, outbound: Outbound, every: timedelta,
                 lines: AccessLines) -> None:
        self.db = db
        self.clock = clock
        self.outbound = outbound
        self.every = every
        self.lines = lines

    async def tell(self) -> bool:
        """Tell the owner of the requests not told yet, if the window is open; True if a
        message was queued."""
        now = self.clock.now()
        if await self.db.fetchval(
                "SELECT 1 FROM pairing_requests WHERE noticed_at IS NULL LIMIT 1") is None:
            return False
        if await self.seconds_until_open() is not None:
            return False  # told recently (a read: a flood of strangers writes nothing here)
        try:
            async with self.db.transaction() as tx:
                rows = await tx.fetch(
                    "UPDATE pairing_requests SET noticed_at = $1 WHERE noticed_at IS NULL"
                    " RETURNING *", now)
                asked = sorted((pairing_request(r) for r in rows), key=lambda p: p.created_at)
                waiting = [p for p in asked if p.status == "pending" and p.expires_at > now]
                if not waiting:
                    return False  # decided or expired before the owner was told: nothing to ask
                opened = await tx.fetchval(
                    "INSERT INTO owner_notices (kind, last_at) VALUES ($1, $2)"
                    " ON CONFLICT (kind) DO UPDATE SET last_at = excluded.last_at"
                    " WHERE owner_notices.last_at <= $3 RETURNING 1", KIND, now,
                    now - self.every)
                if opened is None:
                    raise _WindowClosed  # the window's opening gathers these (`run`)
                # The text is composed per owner, in each one's language (persona.speaking).
                prompts = self._notice(waiting)[1]
                await self.outbound.notify_owner(
                    lambda: self._notice(waiting)[0],
                    dedupe_key=f"pairing-notice:{now.isoformat()}", prompts=prompts, q=tx)
        except _WindowClosed:
            return False
        self.outbound.wake()
        return True

    async def seconds_until_open(self) -> float | None:
        """How long until the window opens again; None when it is open."""
        last = await self.db.fetchval("SELECT last_at FROM owner_notices WHERE kind = $1",
                                      KIND)
        if last is None:
            return None
        left = (last + self.every - self.clock.now()).total_seconds()
        return left if left > 0 else None

    def _notice(self, waiting: list[PairingRequest]
                ) -> tuple[str, tuple[ApprovalPrompt, ...]]:
        """One request: its own card; several: how many, each with its code (the count is
        the list's)."""
        if len(waiting) == 1:
            [request] = waiting
            return (fill(self.lines.pairing_owner_notice, who=who_asks(request, self.lines),
                         code=request.code, approve=self.lines.pairing_approve_word,
                         deny=self.lines.pairing_deny_word),
                    (pairing_prompt(request.code, self.lines),))
        items = "\n".join(fill(self.lines.pairing_owner_item, code=p.code,
                               who=who_asks(p, self.lines)) for p in waiting)
        return fill(self.lines.pairing_owner_batch, count=len(waiting), requests=items,
                    approve=self.lines.pairing_approve_word,
                    deny=self.lines.pairing_deny_word), ()

    async def run(self, every_seconds: float) -> None:
        """Requests that waited for the window are told the moment it opens (a worker's
        loop); it looks again every `every_seconds` for requests another process made (or
        whose own `tell` failed)."""
        while True:
            mark, wait = self.clock.monotonic(), every_seconds
            try:
                # Read before telling: a window that opens while `tell` finds it closed is
                # waited for from `mark`, so already passed, never a round later.
                left = await self.seconds_until_open()
                await self.tell()
                wait = every_seconds if left is None else min(every_seconds, left)
            except Exception:
                log.exception("telling the owner of pairing requests failed; trying again")
            # The clock's own wait: a test's clock decides when the window opens.
            await self.clock.wait_until(mark + wait)
