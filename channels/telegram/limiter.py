"""One outbound limiter per bot: Telegram's limits, kept before a request is made.

Telegram allows about one message per second in a chat (short bursts pass) and about 30 per
second for the whole bot; past that it answers 429 with a `retry_after`. Each chat has a token
bucket (rate 1/s, burst 3 by default) and the bot one more (30/s, no burst); a 429 stops every
send of the bot for exactly `retry_after` seconds (Telegram does not say whether the flood was the
chat's or the bot's, so the safe reading is the bot's).

Time is injected (`now` and `sleep`), so a test can drive it without waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    per_chat_rate: float = 1.0  # messages per second in one chat
    per_chat_burst: int = 3
    # Just under Telegram's 30/s: network jitter can bunch evenly spaced sends together.
    per_bot_rate: float = 29.0
    per_bot_burst: int = 1  # evenly spaced: never more than 30 in any second


class _Bucket:
    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate, self.burst = rate, float(burst)
        self.tokens, self.updated = float(burst), now

    def wait_time(self, now: float) -> float:
        """Seconds until one token is free (0: free now)."""
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        # (A hair's tolerance: float rounding must not leave a waiter sleeping for 1e-17 s.)
        return 0.0 if self.tokens >= 1 - 1e-9 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1


class OutboundLimiter:
    def __init__(self, limits: Limits | None = None, *,
                 now: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.limits = limits or Limits()
        self._now, self._sleep = now, sleep
        self._bot = _Bucket(self.limits.per_bot_rate, self.limits.per_bot_burst, now())
        self._chats: dict[str, _Bucket] = {}
        self._paused_until = 0.0
        self._lock = asyncio.Lock()  # token accounting only; nobody sleeps while holding it

    async def acquire(self, chat: str | None, *, counted: bool = True) -> None:
        """Wait until one more request to `chat` (None: not chat-bound) is within limits.
        `counted=False`: not a message (a button answer, a chat action); it waits only for a
        429 pause."""
        while not counted and self._paused_until > self._now():
            await self._sleep(self._paused_until - self._now())
        while counted:
            async with self._lock:
                now = self._now()
                wait = self._paused_until - now
                if wait <= 0:
                    bucket = self._chat_bucket(chat, now) if chat is not None else None
                    wait = max(self._bot.wait_time(now),
                               bucket.wait_time(now) if bucket else 0.0)
                    if wait <= 0:
                        self._bot.take()
                        if bucket:
                            bucket.take()
                        return
            await self._sleep(wait)

    def ready_in(self, chat: str) -> float:
        """Seconds until one more message to `chat` is within the chat's pace and no 429
        pause holds the bot (the bot-wide pace is a short wait shared by every chat: not
        counted here). Takes nothing."""
        now = self._now()
        bucket = self._chats.get(chat)
        chat_wait = bucket.wait_time(now) if bucket is not None else 0.0
        return max(self._paused_until - now, chat_wait, 0.0)

    def available(self, chat: str) -> int:
        """How many messages `chat` may get right now, before its pace says wait."""
        bucket = self._chats.get(chat)
        if bucket is None:
            return self.limits.per_chat_burst
        bucket.wait_time(self._now())  # tops the bucket up to now
        return int(bucket.tokens + 1e-9)

    def pause(self, seconds: float) -> None:
        """Telegram said 429: nothing goes out for exactly this long."""
        self._paused_until = max(self._paused_until, self._now() + seconds)

    def _chat_bucket(self, chat: str, now: float) -> _Bucket:
        bucket = self._chats.get(chat)
        if bucket is None:
            if len(self._chats) > 10_000:  # forget chats whose bucket is full again
                self._chats = {k: b for k, b in self._chats.items()
                               if b.wait_time(now) > 0 or b.tokens < b.burst}
            bucket = self._chats[chat] = _Bucket(self.limits.per_chat_rate,
                                                 self.limits.per_chat_burst, now)
        return bucket
