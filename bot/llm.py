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
from openai import AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from bot.backoff import backoff_delay
from bot.clock import Clock
from bot.sanitize import clean_json_text, clean_text

log = logging.getLogger(__name__)

Message = dict[str, Any]
TextSink = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model wrote it; may be invalid

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: TokenUsage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens


@dataclass
class LLMResponse:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None

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


# --- errors ---------------------------------------------------------------------------------


class LLMError(Exception):
    """Any failure of an LLM call, already classified."""


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


_OVERFLOW_PATTERN = re.compile(
    r"context.length|context.window|maximum context|too many tokens|prompt is too long"
    r"|reduce the length|exceeds the (?:model'?s )?(?:maximum|max)",
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


# --- what to do about each error ---------------------------------------------------------


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
class GiveUp:
    pass


Decision = Retry | Escalate | GiveUp
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


ERROR_HANDLERS: dict[type[LLMError], ErrorHandler] = {
    LLMRateLimitError: retry_with_backoff,
    LLMServerError: retry_with_backoff,
    LLMMalformedResponseError: retry_with_backoff,
    LLMTimeoutError: retry_once,
    LLMAuthError: raise_to_caller,
    LLMBadRequestError: raise_to_caller,
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
    while True:
        try:
            response = await llm.complete(build_view(level), tools, on_text=on_text)
            return CallOutcome(response, level, retries)
        except LLMError as err:
            kind = type(err)
            attempts[kind] = attempts.get(kind, 0) + 1
            decision = handler_for(err)(err, attempts[kind], cfg)
            log.warning("llm call failed (%s, attempt %d): %s -> %s",
                        kind.__name__, attempts[kind], _short(err), decision)
            match decision:
                case Retry(delay):
                    retries += 1
                    await clock.sleep(delay)
                case Escalate():
                    if level >= max_recovery_level:
                        raise LLMContextExhaustedError(str(err)) from err
                    level += 1
                case GiveUp():
                    raise


def _short(err: Exception) -> str:
    text = str(err)
    return text if len(text) < 200 else text[:200] + "..."


# --- the OpenAI-compatible implementation -----------------------------------------------


class OpenAILLM:
    """LLM over `openai.AsyncOpenAI`.

    Requests go through the client's documented low-level `post()`: it keeps the client's
    auth, error types and connection pool, but skips the per-message TypedDict transform that
    `chat.completions.create` runs on every call (about 0.2 ms per message; see `make bench`).
    The client's own retries are off: ERROR_HANDLERS decide.
    """

    def __init__(self, *, base_url: str | None, api_key: str, model: str,
                 timeout: float = 60.0, extra_body: dict[str, Any] | None = None) -> None:
        self.model = model
        self._extra = dict(extra_body or {})
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
        on_text: TextSink | None = None,
    ) -> LLMResponse:
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self._extra}
        if tools:
            body["tools"] = tools
        try:
            if on_text is None:
                completion = await self._client.post(
                    "/chat/completions", body=body, cast_to=ChatCompletion)
                return _from_completion(completion)
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            stream = await self._client.post(
                "/chat/completions", body=body, cast_to=ChatCompletion,
                stream=True, stream_cls=AsyncStream[ChatCompletionChunk])
            return await _collect_stream(stream, on_text)
        except openai.APIResponseValidationError as err:
            raise LLMMalformedResponseError(f"the endpoint's answer is not a completion: "
                                            f"{_short(err)}") from err
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            # A 200 whose body (or a stream event) is not JSON: the client's json() raises.
            # (With another content type the client returns the text instead: see
            # _from_completion. Its strict mode, off here, would raise the validation error.)
            raise LLMMalformedResponseError(
                f"the endpoint's answer is not JSON: {_short(err)}") from err

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
            return [m.id async for m in page]
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err

    async def close(self) -> None:
        await self._client.close()


# Deeper than this, tool-call arguments are not something a person asked for: refusing them
# at the port keeps a recursive parse (and everything after it) safe.
MAX_ARGUMENT_DEPTH = 32


def _from_completion(completion: Any) -> LLMResponse:
    """Our response from the client's parse. Without strict validation the client hands back
    whatever the body held (a str for a non-JSON body, None for `null`, a model missing
    fields), so every part is checked here."""
    if not isinstance(completion, ChatCompletion):
        raise LLMMalformedResponseError(
            f"the endpoint's answer is not a completion ({type(completion).__name__})")
    choices = getattr(completion, "choices", None)
    if not choices:
        raise LLMMalformedResponseError("the endpoint returned no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise LLMMalformedResponseError("the endpoint returned a choice without a message")
    calls: list[ToolCall] = []
    for tc in getattr(message, "tool_calls", None) or []:
        function = getattr(tc, "function", None)
        if function is None:
            continue
        calls.append(ToolCall(getattr(tc, "id", "") or f"call_{len(calls)}",
                              clean_text(getattr(function, "name", "") or ""),
                              clean_json_text(getattr(function, "arguments", "") or "")))
    _check_depth(calls)
    usage = TokenUsage()
    raw_usage = getattr(completion, "usage", None)
    if raw_usage:
        usage = TokenUsage(getattr(raw_usage, "prompt_tokens", 0) or 0,
                           getattr(raw_usage, "completion_tokens", 0) or 0)
    content = getattr(message, "content", None)
    return LLMResponse(None if content is None else clean_text(content), calls, usage,
                       getattr(choice, "finish_reason", None))


def _check_depth(calls: list[ToolCall]) -> None:
    for call in calls:
        if json_depth(call.arguments) > MAX_ARGUMENT_DEPTH:
            raise LLMMalformedResponseError(
                f"the arguments of {call.name or 'a tool call'} are nested more than "
                f"{MAX_ARGUMENT_DEPTH} levels deep")


def json_depth(text: str) -> int:
    """How deep the brackets of a JSON text nest, in one linear pass (no parse, no recursion:
    the text may be hostile). Brackets inside strings do not count."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


async def _collect_stream(stream: AsyncStream[ChatCompletionChunk],
                          on_text: TextSink) -> LLMResponse:
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage = TokenUsage()
    finish: str | None = None
    async for chunk in stream:
        if chunk.usage:
            usage = TokenUsage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
                await on_text(clean_text(delta.content))
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                if tc.id:
                    slot["id"] = tc.id
                if tc.function and tc.function.name:
                    slot["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    slot["arguments"] += tc.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    tool_calls = [ToolCall(s["id"] or f"call_{i}", clean_text(s["name"]),
                           clean_json_text(s["arguments"]))
                  for i, s in sorted(calls.items())]
    _check_depth(tool_calls)
    # Cleaned whole, not per chunk: an emoji's two surrogate halves may come in two chunks.
    return LLMResponse(clean_text("".join(text)) or None, tool_calls, usage, finish)


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
