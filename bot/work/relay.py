"""A process that hands its inbound work on (bot.gateway.gateway, with Redis): a stored row is
announced on the work stream, and what must reach a turn already running (/stop, a message
that may join it) is said as a signal; the worker running that person's turn acts on it.
Delivery wake-ups from a process that does not deliver go the same way."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.plumbing.outages import REDIS, about
from bot.work.control import Signals
from bot.work.streams import WorkStream

log = logging.getLogger(__name__)


@dataclass
class Relay:
    stream: WorkStream
    signals: Signals
    _saying: set[asyncio.Task[None]] = field(default_factory=set)

    async def announce(self, user_id: str, row_id: int) -> None:
        """The row is stored already: Redis away only delays it (a worker's sweep finds it)."""
        try:
            await self.stream.announce(user_id, row_id)
        except Exception as err:
            log.warning("work stream: row %d for %s not announced (Redis: %s); a worker's "
                        "sweep will find it", row_id, user_id, err, extra=about(REDIS))

    async def stop(self, user_id: str, row_id: int) -> None:
        await self.signals.say("stop", user=user_id, row=str(row_id))

    async def steer(self, user_id: str, row_id: int, text: str) -> None:
        await self.signals.say("steer", user=user_id, row=str(row_id), text=text)

    def wake_elsewhere(self) -> Callable[[str | None, str | None], None]:
        """What Outbound.wake does in a process that delivers nothing itself."""

        def wake(channel: str | None, address: str | None) -> None:
            fields = {"channel": channel, "address": address} if channel and address else {}
            task = asyncio.get_running_loop().create_task(self.signals.say("wake", **fields))
            self._saying.add(task)
            task.add_done_callback(self._saying.discard)

        return wake
