"""What one turn may spend on sub-tasks (bot.subtasks, the `delegate` tool): how many it may
start (`loop.subtask_max_per_turn`), how many run at once (`loop.subtask_concurrency`), and
their LLM requests, each taken from the person's rate limit (a triggered run's like a
message's; the owner is never rate limited). One per turn, made with the turn's context
(bot.orchestrator.prepare_context), never shared between turns or people.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from bot.llm import LLM, LLMError, LLMResponse, Message, TextSink

if TYPE_CHECKING:
    from bot.gateway.ratelimit import SlidingWindowLimiter
    from bot.gateway.users import User
    from bot.loop_types import ReactLoopConfig

# The result_status of a delegate call the allowance stopped: the reply then says what was
# not done (bot.subtasks.short_changed), whatever the model makes of its tool error.
NOT_STARTED = "SUBTASK_LIMIT"
RATE_LIMITED = "SUBTASK_RATE_LIMITED"


class OverAllowance(LLMError):
    """A sub-task's next LLM request would pass the person's rate limit: it stops there. (No
    retry and no fallback model is tried for it: bot.llm.handler_for, bot.fallback.)"""


@dataclass
class TurnAllowance:
    max_subtasks: int = 3
    concurrency: int = 2
    # Takes one LLM request from the person's rate limit; False when it is reached. None: no
    # rate limit (the owner).
    charge: Callable[[], bool] | None = None
    per_minute: int = 0  # the rate limit, for the words the model reads
    started: int = 0
    _slots: asyncio.Semaphore | None = field(default=None, repr=False)

    def start(self) -> bool:
        """Count one more sub-task, if the turn may start it."""
        if self.started >= self.max_subtasks:
            return False
        self.started += 1
        return True

    @property
    def slots(self) -> asyncio.Semaphore:
        """Held while a sub-task runs: at most `concurrency` at once."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        return self._slots

    def request(self) -> bool:
        return self.charge is None or self.charge()


def turn_allowance(cfg: ReactLoopConfig, limiter: SlidingWindowLimiter | None,
                   user: User) -> TurnAllowance:
    """A fresh allowance for one turn of `user`: their sub-tasks' LLM requests are taken
    from the same limit as their messages (never the owner's: the owner is not limited)."""
    charge = partial(limiter.allow, user.id) \
        if limiter is not None and not user.is_owner else None
    return TurnAllowance(cfg.subtask_max_per_turn, cfg.subtask_concurrency, charge,
                         limiter.limit if limiter is not None else 0)


class ChargedLLM:
    """A sub-task's LLM: each request is first taken from the turn's allowance
    (OverAllowance when it cannot be)."""

    def __init__(self, inner: LLM, allowance: TurnAllowance) -> None:
        self.inner = inner
        self.allowance = allowance
        self.model = inner.model
        self.requests = 0

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                       on_text: TextSink | None = None) -> LLMResponse:
        if not self.allowance.request():
            raise OverAllowance(f"the rate limit of {self.allowance.per_minute} requests a "
                                "minute is reached")
        self.requests += 1
        return await self.inner.complete(messages, tools, on_text=on_text)

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def close(self) -> None:
        """The inner LLM is the app's: closed by its owner, never by a sub-task."""
