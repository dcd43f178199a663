"""Fallback models (`llm.fallback_models`): when the model in use keeps failing, the turn goes
on with the next one.

A failure moves the turn on only once the error table (bot.llm.recovery.ERROR_HANDLERS) has
given up on it: repeated 5xx or overload, rate limits that do not clear, a timeout, an answer
that keeps being unreadable, or an endpoint that does not know the model. A refused key or a
bad request is the deployment's mistake and stops the turn as before; a context overflow has
its own recovery. The switch lasts for the rest of the turn (the index lives in the run, never on a
shared object); the next turn starts with the first model again. Each model says whose tool
messages it reads and writes (`provider`): where that differs, earlier tool rounds are
flattened for it in the request view (bot.loop.masking).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

from bot.llm.port import (
    LLM,
    LLMError,
    LLMMalformedResponseError,
    LLMModelNotFoundError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)

T = TypeVar("T")

SWITCH_ON = (LLMServerError, LLMRateLimitError, LLMTimeoutError, LLMMalformedResponseError,
             LLMModelNotFoundError)
DEFAULT_PROVIDER = "api.openai.com"  # where the openai client goes without a base URL


@dataclass(frozen=True)
class ModelSlot:
    llm: LLM
    provider: str  # whose tool-message format it reads and writes


def provider_of(base_url: str | None) -> str:
    """A provider's default name: its endpoint's host (and port)."""
    if not base_url:
        return DEFAULT_PROVIDER
    return urlsplit(base_url).netloc or base_url


def switchable(err: BaseException) -> bool:
    return isinstance(err, SWITCH_ON)


OnSwitch = Callable[[ModelSlot, ModelSlot, LLMError], None]


async def on_models(slots: Sequence[ModelSlot], start: int,
                    attempt: Callable[[ModelSlot], Awaitable[T]],
                    on_switch: OnSwitch) -> tuple[T, int]:
    """`attempt` on the model at `start`, then on each next one while the failure is one a
    fallback is for: (its result, the index of the model that gave it). The last model's
    error, or one no fallback is for, is raised."""
    index = start
    while True:
        try:
            return await attempt(slots[index]), index
        except LLMError as err:
            if not switchable(err) or index + 1 >= len(slots):
                raise
            on_switch(slots[index], slots[index + 1], err)
            index += 1
