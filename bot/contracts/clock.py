"""Injectable time: everything that asks "what time is it" takes a Clock."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: for deadlines and durations."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait this long (the caller's own pause, e.g. a backoff)."""
        ...

    async def wait_until(self, deadline: float) -> None:
        """Return once `monotonic()` has reached `deadline` (a deadline that others race)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait_until(self, deadline: float) -> None:
        await asyncio.sleep(max(0.0, deadline - time.monotonic()))


class FakeClock:
    """A clock tests move by hand; sleeping advances it instead of waiting.

    `wait_until` does not move the clock: it returns when someone else does (`advance`, or a
    `sleep` elsewhere), so a test decides exactly when a deadline passes."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        self._monotonic = 0.0
        self._moved = asyncio.Event()  # binds to a loop only when first awaited
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float = 0, **kwargs: float) -> None:
        step = timedelta(seconds=seconds, **kwargs)
        self._now += step
        # Moving the wall clock back (a test of a DST fall-back) does not move this one back.
        self._monotonic += max(0.0, step.total_seconds())
        self._wake()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)

    async def wait_until(self, deadline: float) -> None:
        while self._monotonic < deadline:
            await self._moved.wait()

    def _wake(self) -> None:
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()
