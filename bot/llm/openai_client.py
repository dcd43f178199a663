"""The LLM port's implementation over any OpenAI-compatible endpoint: `OpenAILLM` on the
`openai` client, and the checks that turn whatever the endpoint answered into an
`LLMResponse` or an `LLMMalformedResponseError`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from bot.llm.port import (
    LLMMalformedResponseError,
    LLMResponse,
    Message,
    TextSink,
    TokenUsage,
    ToolCall,
    classify_openai_error,
    short_error,
)
from bot.text.sanitize import clean_json_text, clean_text


class OpenAILLM:
    """LLM over `openai.AsyncOpenAI`.

    Requests go through the client's documented low-level `post()`: it keeps the client's
    auth, error types and connection pool, but skips the per-message TypedDict transform that
    `chat.completions.create` runs on every call (about 0.2 ms per message; see `make bench`).
    The client's own retries are off: ERROR_HANDLERS decide. Its transport is aiohttp (the
    client's documented `DefaultAioHttpClient`), the HTTP stack the rest of Valet runs on: a
    request costs about a quarter less CPU than on the default transport (measured with the
    same bodies against the fake server: 1.1-1.5 ms against 1.6-1.9 ms, server included).
    """

    def __init__(self, *, base_url: str | None, api_key: str, model: str,
                 timeout: float = 60.0, extra_body: dict[str, Any] | None = None) -> None:
        self.model = model
        self._extra = dict(extra_body or {})
        # A base URL with credentials in it (a proxy's basic auth) keeps the default
        # transport, which turns them into the Authorization header; aiohttp refuses a URL's
        # credentials beside the client's own Authorization header.
        plain = not (base_url and urlsplit(base_url).username)
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout,
            http_client=openai.DefaultAioHttpClient(timeout=timeout) if plain else None)

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
                                            f"{short_error(err)}") from err
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            # A 200 whose body (or a stream event) is not JSON: the client's json() raises.
            # (With another content type the client returns the text instead: see
            # _from_completion. Its strict mode, off here, would raise the validation error.)
            raise LLMMalformedResponseError(
                f"the endpoint's answer is not JSON: {short_error(err)}") from err

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
                       getattr(choice, "finish_reason", None), _reasoning(message))


# Where OpenAI-compatible servers put a reasoning model's thinking (DeepSeek, vLLM and
# llama.cpp: reasoning_content; Ollama and OpenRouter: reasoning).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def _reasoning(part: Any) -> str | None:
    """A message's (or a stream delta's) reasoning text, when the server sent one."""
    for name in REASONING_FIELDS:
        value = getattr(part, name, None)
        if isinstance(value, str) and value:
            return clean_text(value)
    return None


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
    thought: list[str] = []
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
            if (reasoning := _reasoning(delta)) is not None:
                thought.append(reasoning)
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
    return LLMResponse(clean_text("".join(text)) or None, tool_calls, usage, finish,
                       "".join(thought) or None)


