"""Waiting for a wake-up with a bound: `woken(event, seconds)`.

Loops that sleep until woken or until their poll comes round (the deliverer, the event
dispatcher, the spool, the mail deliverer) must stop when they are cancelled. On Python 3.11
`asyncio.wait_for` can lose a cancellation that arrives as the awaited event is set: it returns
the event's result instead of raising, the loop goes on, and whoever awaits its task waits
forever (seen as a test run hanging in `StoredEventBus.stop`). `asyncio.timeout` keeps it.
"""

from __future__ import annotations

import asyncio


async def woken(event: asyncio.Event, seconds: float) -> bool:
    """Until `event` is set (True) or `seconds` have passed (False); a cancellation is never
    swallowed."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
