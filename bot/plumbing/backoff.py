"""The one backoff formula, shared by the LLM port's retries and the outbox's deliveries."""

from __future__ import annotations


def backoff_delay(attempt: int, *, base: float, cap: float,
                  retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt` (1 = the first retry): `base` doubled
    each time, at most `cap`. A server's `retry_after` is a floor (never retry earlier than it
    asked), itself bounded by `cap`: the LLM port would rather give up than wait as long as
    any server likes. (The outbox waits a channel's retry_after exactly: see
    bot.gateway.delivery.)"""
    delay = min(cap, base * 2 ** max(0, attempt - 1))
    if retry_after is not None:
        delay = max(delay, min(retry_after, cap))
    return delay
