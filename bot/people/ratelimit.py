"""Per-user rate limit: a sliding window of recent turns, on the injected clock."""

from __future__ import annotations

from collections import defaultdict, deque

from bot.contracts.clock import Clock


class SlidingWindowLimiter:
    def __init__(self, clock: Clock, per_minute: int, window_seconds: float = 60.0) -> None:
        self.clock = clock
        self.limit = per_minute
        self.window = window_seconds
        self._hits: defaultdict[str, deque[float]] = defaultdict(deque)

    def allow(self, key: str, limit: int | None = None) -> bool:
        """Count one hit for `key` if it is under the limit (this one's, or `limit`); False
        (and no count) if not."""
        limit = self.limit if limit is None else limit
        if limit <= 0:
            return True
        now = self.clock.now().timestamp()
        hits = self._hits[key]
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= limit:
            return False
        hits.append(now)
        return True
