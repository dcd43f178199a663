"""The LLM port: one `complete()` over any OpenAI-compatible endpoint, its error classes,
and the table that says what to do about each error."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai

from bot.llm.quirks import Quirk

log = logging.getLogger(__name__)

Message = dict[str, Any]
TextSink = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it; may be invalid

    def to_wire(self) -> dict[str, Any]:
        """The call as the history keeps it and sends it back. Arguments that are not a JSON
        object go back as `{}` (their tool result already says they were unreadable): a
        server that checks them (llama.cpp: HTTP 500 "Failed to parse tool call arguments
        as JSON") would refuse every later request of the conversation."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": readable_arguments(self.arguments)},
        }


def readable_arguments(arguments: str) -> str:
    """`arguments` when they are a JSON object, else "{}"."""
    try:
        value = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return "{}"
    return arguments if isinstance(value, dict) else "{}"


@dataclass
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    # Of the input tokens, those the endpoint read from its prompt cache (billed less).
    cached_input_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: TokenUsage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_input_tokens += other.cached_input_tokens


@dataclass
class LLMResponse:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None
    # What a reasoning model said it thought (`reasoning_content`, or `<think>` blocks taken
    # out of the content), when the endpoint returns it: shown in the turn's trace (/debug),
    # never sent back to the model and never to a person.
    reasoning: str | None = None
    # How the answer departed from the OpenAI wire format and was read anyway
    # (bot.llm.dialects.Quirk): calls written as text, think blocks, an empty answer asked again.
    quirks: tuple[str, ...] = ()
    requests: int = 1  # the requests this answer took (2: an empty answer was asked again)

    @property
    def empty(self) -> bool:
        """No call and nothing a person could read (an answer that only imitated a tool's
        result is not empty: the person is told nothing was done)."""
        return not self.tool_calls and not (self.content or "").strip() \
            and Quirk.IMITATED_RESULT not in self.quirks

    def assistant_message(self) -> Message:
        msg: Message = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            msg["tool_calls"] = [tc.to_wire() for tc in self.tool_calls]
            if not self.content:
                msg["content"] = None
        return msg


class LLM(Protocol):
    model: str

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
        on_text: TextSink | None = None,
    ) -> LLMResponse:
        """One chat completion. With `on_text`, streams and feeds it the text as it comes."""
        ...

    async def list_models(self) -> list[str]: ...

    async def close(self) -> None: ...


class WrappedLLM:
    """An `LLM` around another, adding to `complete()` (counting, pricing): the rest passes
    through to the inner one."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.model = inner.model

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                       on_text: TextSink | None = None) -> LLMResponse:
        return await self.inner.complete(messages, tools, on_text=on_text)

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def close(self) -> None:
        await self.inner.close()

    @property
    def context_tokens(self) -> int | None:
        """The inner one's context window, once learnt (bot.llm.context_limit); None before,
        or for an LLM that learns none."""
        return getattr(self.inner, "context_tokens", None)


# --- errors ---------------------------------------------------------------------------------


class LLMError(Exception):
    """Any failure of an LLM call, already classified."""

    # Set by the loop on an error that ends a turn: what the person added while it ran
    # (bot.loop.steering), so the turn's record keeps their words.
    said_mid_turn: tuple[str, ...] = ()
    # ...and what the turn had spent when it failed (its /debug trace: bot.turn.trace_store).
    spent: Any = None  # bot.loop.types.Spent


class LLMRateLimitError(LLMError):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMTimeoutError(LLMError):
    pass


class LLMServerError(LLMError):
    """5xx or a dropped connection: transient, worth a bounded number of retries."""


class LLMAuthError(LLMError):
    pass


class LLMContextOverflowError(LLMError):
    pass


class LLMContextExhaustedError(LLMError):
    """Every step of the context-overflow recovery chain failed."""


class LLMBadRequestError(LLMError):
    """The request is wrong in a way no retry fixes (unknown model, bad parameter)."""


class LLMInvalidRequestError(LLMBadRequestError):
    """The server says the request itself is invalid, whatever its status (llama.cpp answers
    500 "Failed to parse tool call arguments as JSON"): never sent again as it was, repaired
    once (bot.llm.repair)."""


class LLMMalformedResponseError(LLMError):
    """The endpoint answered, but not with a usable completion: a body that is not JSON, no
    choices, a null message, tool-call arguments nested absurdly deep. Retried like a server
    error, at the call: the turn is never re-run for it (its tools already ran)."""


class LLMModelNotFoundError(LLMBadRequestError):
    """The endpoint does not know the configured model (404 / model_not_found)."""


def is_misconfiguration(err: BaseException) -> bool:
    """True when waiting will not help: the key was refused or the model does not exist. The
    user is told the assistant is misconfigured, the owner what to fix (`valet doctor`)."""
    return isinstance(err, LLMAuthError | LLMModelNotFoundError)


def misconfiguration_hint(err: BaseException) -> str:
    """One line for the owner's log: what is wrong and what to check."""
    if isinstance(err, LLMAuthError):
        return ("the LLM endpoint refused the API key: check VALET_LLM_API_KEY / "
                "OPENAI_API_KEY, then run `valet doctor`")
    if isinstance(err, LLMModelNotFoundError):
        return ("the LLM endpoint does not know the model: check VALET_LLM_MODEL (or "
                "llm.model) against `valet doctor`, which lists the models it offers")
    return str(err)


# A server error that blames the request, not the server: the same request fails every time.
_INVALID_REQUEST = re.compile(
    r"failed to parse tool call arguments|tool call arguments? (?:is|are) not (?:valid )?JSON"
    r"|invalid tool call arguments", re.IGNORECASE)

_OVERFLOW_PATTERN = re.compile(
    r"context.length|context.window|maximum context|too many tokens|prompt is too long"
    r"|reduce the length|exceeds the (?:model'?s )?(?:maximum|max|available context)",
    re.IGNORECASE,
)


def classify_openai_error(err: openai.OpenAIError) -> LLMError:
    """Translate the client's exception into one of ours (the handler table's keys)."""
    text = str(err)
    if isinstance(err, openai.APITimeoutError):
        return LLMTimeoutError(text)
    if isinstance(err, openai.APIConnectionError):
        return LLMServerError(text)
    if isinstance(err, openai.RateLimitError):
        return LLMRateLimitError(text, _retry_after(err.response))
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        return LLMAuthError(text)
    if isinstance(err, openai.APIStatusError):
        code = getattr(err, "code", None)
        if err.status_code == 413 or code == "context_length_exceeded" or (
            err.status_code == 400 and _OVERFLOW_PATTERN.search(text)
        ):
            return LLMContextOverflowError(text)
        if _INVALID_REQUEST.search(text):
            return LLMInvalidRequestError(text)
        if err.status_code >= 500:
            return LLMServerError(text)
        if err.status_code == 404 or code == "model_not_found":
            return LLMModelNotFoundError(text)
        return LLMBadRequestError(text)
    return LLMServerError(text)


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None) or {}
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            continue
    return None


def short_error(err: Exception) -> str:
    text = str(err)
    return text if len(text) < 200 else text[:200] + "..."


def summarize_args(arguments: str, limit: int = 80) -> dict[str, Any]:
    """A short snapshot of tool arguments for telemetry: long values are cut."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return {"_raw": arguments[:limit]}
    if not isinstance(parsed, dict):
        return {"_value": str(parsed)[:limit]}
    return {k: (v if isinstance(v, int | float | bool) or v is None else str(v)[:limit])
            for k, v in parsed.items()}
