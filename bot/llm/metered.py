"""The LLM port with its requests counted: latency, tokens and errors by model
(bot.plumbing.metrics). The composition root wraps whichever LLM it was given."""

from __future__ import annotations

import re
import time
from typing import Any

from bot.llm.port import LLM, LLMResponse, Message, TextSink, WrappedLLM
from bot.plumbing.metrics import Metrics


class MeteredLLM(WrappedLLM):
    """Any `LLM`, each `complete()` reported to `metrics`; everything else passes through."""

    def __init__(self, inner: LLM, metrics: Metrics) -> None:
        super().__init__(inner)
        self.metrics = metrics

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                       on_text: TextSink | None = None) -> LLMResponse:
        started = time.perf_counter()
        try:
            response = await self.inner.complete(messages, tools, on_text=on_text)
        except Exception as err:
            self.metrics.llm_request(self.model, time.perf_counter() - started,
                                     error=error_label(err))
            raise
        self.metrics.llm_request(self.model, time.perf_counter() - started,
                                 input_tokens=response.usage.input_tokens,
                                 output_tokens=response.usage.output_tokens,
                                 requests=response.requests)
        return response


def error_label(err: BaseException) -> str:
    """`LLMRateLimitError` -> "rate_limit": a short, bounded label."""
    name = type(err).__name__.removeprefix("LLM").removesuffix("Error") or type(err).__name__
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
