"""What to do about each error of an LLM call: the strategy table (retry with backoff, retry
once, shrink the request view, repair the request once, give up) and the call that follows
it (`call_with_recovery`). The errors themselves are the port's (bot.llm.port)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bot.contracts.clock import Clock
from bot.llm.port import (
    LLM,
    LLMAuthError,
    LLMBadRequestError,
    LLMContextExhaustedError,
    LLMContextOverflowError,
    LLMError,
    LLMMalformedResponseError,
    LLMModelNotFoundError,
    LLMRateLimitError,
    LLMResponse,
    LLMServerError,
    LLMTimeoutError,
    Message,
    TextSink,
    short_error,
)
from bot.llm.repair import repaired
from bot.plumbing.backoff import backoff_delay

log = logging.getLogger(__name__)


class RetrySettings(Protocol):
    llm_max_retries: int
    llm_retry_base_delay: float
    llm_retry_max_delay: float


@dataclass(frozen=True)
class Retry:
    delay: float


@dataclass(frozen=True)
class Escalate:
    """Shrink the request view one more step and try again."""


@dataclass(frozen=True)
class Repair:
    """Ask again once with the request repaired (bot.llm.repair); give up if it cannot be."""


@dataclass(frozen=True)
class GiveUp:
    pass


Decision = Retry | Escalate | Repair | GiveUp
ErrorHandler = Callable[[LLMError, int, RetrySettings], Decision]


def retry_with_backoff(err: LLMError, attempt: int, cfg: RetrySettings) -> Decision:
    if attempt > cfg.llm_max_retries:
        return GiveUp()
    # The server knows when it will take us again; never retry earlier than that (but wait
    # no longer than the cap: past it, giving up and telling the user is better).
    retry_after = err.retry_after if isinstance(err, LLMRateLimitError) else None
    return Retry(backoff_delay(attempt, base=cfg.llm_retry_base_delay,
                               cap=cfg.llm_retry_max_delay, retry_after=retry_after))


def retry_once(err: LLMError, attempt: int, cfg: RetrySettings) -> Decision:
    return Retry(0.0) if attempt <= 1 else GiveUp()


def raise_to_caller(err: LLMError, attempt: int, cfg: RetrySettings) -> Decision:
    return GiveUp()


def recover_context(err: LLMError, attempt: int, cfg: RetrySettings) -> Decision:
    return Escalate()


def repair_once(err: LLMError, attempt: int, cfg: RetrySettings) -> Decision:
    return Repair() if attempt <= 1 else GiveUp()


ERROR_HANDLERS: dict[type[LLMError], ErrorHandler] = {
    LLMRateLimitError: retry_with_backoff,
    LLMServerError: retry_with_backoff,
    LLMMalformedResponseError: retry_with_backoff,
    LLMTimeoutError: retry_once,
    LLMAuthError: raise_to_caller,
    LLMModelNotFoundError: raise_to_caller,
    LLMBadRequestError: repair_once,
    LLMContextOverflowError: recover_context,
}


def handler_for(err: LLMError) -> ErrorHandler:
    for cls in type(err).__mro__:
        if cls in ERROR_HANDLERS:
            return ERROR_HANDLERS[cls]
    return raise_to_caller


ViewBuilder = Callable[[int], list[Message]]


@dataclass
class CallOutcome:
    response: LLMResponse
    recovery_level: int
    retries: int


async def call_with_recovery(
    llm: LLM,
    build_view: ViewBuilder,
    tools: list[dict[str, Any]] | None,
    cfg: RetrySettings,
    clock: Clock,
    *,
    max_recovery_level: int,
    start_level: int = 0,
    on_text: TextSink | None = None,
) -> CallOutcome:
    """Call the LLM, applying ERROR_HANDLERS. `build_view(level)` gives the request messages
    for a recovery level (0 = normal); context overflow moves to the next level."""
    level = start_level
    attempts: dict[type[LLMError], int] = {}
    retries = 0
    repair = False  # the server refused the request as invalid: it goes repaired from now
    while True:
        try:
            view = build_view(level)
            if repair:
                view = repaired(view) or view
            response = await llm.complete(view, tools, on_text=on_text)
            return CallOutcome(response, level, retries)
        except LLMError as err:
            kind = type(err)
            attempts[kind] = attempts.get(kind, 0) + 1
            decision = handler_for(err)(err, attempts[kind], cfg)
            log.warning("llm call failed (%s, attempt %d): %s -> %s",
                        kind.__name__, attempts[kind], short_error(err), decision)
            match decision:
                case Retry(delay):
                    retries += 1
                    await clock.sleep(delay)
                case Escalate():
                    if level >= max_recovery_level:
                        raise LLMContextExhaustedError(str(err)) from err
                    level += 1
                case Repair():
                    if repair or repaired(build_view(level)) is None:
                        raise  # nothing of the request can be mended: never sent as it was
                    repair = True
                    retries += 1
                case GiveUp():
                    raise
