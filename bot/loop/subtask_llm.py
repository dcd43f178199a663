"""The sub-task's LLM that takes each request from the turn's sub-task allowance
(bot.contracts.subtask_allowance, made with the turn's context by bot.turn.orchestrator): the
person's rate limit, a triggered run's like a message's; the owner is never rate limited."""

from __future__ import annotations

from typing import Any

from bot.contracts.subtask_allowance import SubtaskAllowance
from bot.llm.port import LLM, LLMError, LLMResponse, Message, TextSink


class OverAllowance(LLMError):
    """A sub-task's next LLM request would pass the person's rate limit: it stops there. (No
    retry and no fallback model is tried for it: bot.llm.recovery.handler_for,
    bot.loop.fallback.)"""


class SubtaskLLM:
    """A sub-task's LLM: each request is first taken from the turn's allowance
    (OverAllowance when it cannot be)."""

    def __init__(self, inner: LLM, allowance: SubtaskAllowance) -> None:
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
