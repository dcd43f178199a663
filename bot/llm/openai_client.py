"""The LLM port's implementation over any OpenAI-compatible endpoint: `OpenAILLM` on the
`openai` client, and the checks that turn whatever the endpoint answered into an
`LLMResponse` or an `LLMMalformedResponseError`.

Servers answer in dialects (bot.llm.dialects, bot.llm.reasoning): every answer is read by
bot.llm.reading, streamed text reaches the sink through bot.llm.visible, an empty answer is
asked again once, and a server that refuses tools is asked without them from then on."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from bot.llm.call_fields import arguments_text, tool_names
from bot.llm.caps import CAP_FIELDS, OutputCaps, default_field, field_instead
from bot.llm.context_window import limit_from_refusal
from bot.llm.port import (
    LLMContextOverflowError,
    LLMMalformedResponseError,
    LLMResponse,
    Message,
    TextSink,
    TokenUsage,
    ToolCall,
    classify_openai_error,
    short_error,
)
from bot.llm.quirks import TEXT_CALLS, Quirk, refuses_tools
from bot.llm.reading import ReadingRules, read_answer, reads_text_calls
from bot.llm.visible import VisibleText
from bot.text.sanitize import clean_json_text, clean_text

log = logging.getLogger(__name__)


class _ToolsRefused(Exception):
    """The server will not take a request with tools (the model has no tool template)."""


class _CapRefused(Exception):
    """The server refused the field the cap was sent in: `instead` is the one to use."""

    def __init__(self, instead: str, why: str) -> None:
        super().__init__(why)
        self.instead = instead


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
                 timeout: float = 60.0, extra_body: dict[str, Any] | None = None,
                 tool_calls: str = "auto", caps: OutputCaps | None = None,
                 cap_field: str | None = None) -> None:
        self.model = model
        # Where calls written as text are read (`llm.tool_calls`: auto, native, text).
        self.tool_calls = tool_calls
        self._extra = dict(extra_body or {})
        # Every request's cap on the tokens it may write (bot.llm.caps; None: uncapped, a
        # test's client), in the field this endpoint reads: by its host, configured, or
        # learnt when the server refused one (then for good).
        self.caps = caps
        self.base_url = base_url
        self.cap_field = cap_field or default_field(base_url)
        # A base URL with credentials in it (a proxy's basic auth) keeps the default
        # transport, which turns them into the Authorization header; aiohttp refuses a URL's
        # credentials beside the client's own Authorization header.
        plain = not (base_url and urlsplit(base_url).username)
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout,
            http_client=openai.DefaultAioHttpClient(timeout=timeout) if plain else None)
        # What this endpoint was seen to do, learned from its answers (never configured):
        self.tools_refused = False  # it refused a request with tools: ask without them
        # Streamed text is shown only after a closing thinking tag (bot.llm.visible): until
        # an answer shows how the model writes (None), and for good once it thought aloud in
        # the text (a template may open the tag in the prompt, so no opening tag comes).
        self.thought_first: bool | None = None
        # It sent a structured call: in `auto`, calls written as text are words from then on.
        self.native_calls = False
        # The context window it refused a request for (bot.llm.context_limit): requests are
        # built within it; `on_context_learnt` keeps it (per endpoint and model).
        self.context_tokens: int | None = None
        self.on_context_learnt: Callable[[int], Awaitable[None]] | None = None
        self.endpoint = base_url or "https://api.openai.com/v1"

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
        on_text: TextSink | None = None,
    ) -> LLMResponse:
        response = await self._answer(messages, tools, on_text)
        if response.empty:
            # Local servers sometimes answer nothing at all (ollama #10899): the same request
            # once more, its tokens counted with the first's; then the caller's own words.
            log.info("the LLM %s answered nothing; asking once more", self.model)
            again = await self._answer(messages, tools, on_text)
            again.usage.add(response.usage)
            again.requests += response.requests
            again.quirks = tuple(dict.fromkeys((*again.quirks, Quirk.ASKED_AGAIN)))
            response = again
        return response

    async def _answer(self, messages: list[Message], tools: list[dict[str, Any]] | None,
                      on_text: TextSink | None) -> LLMResponse:
        offered = frozenset() if self.tools_refused else tool_names(tools)
        try:
            response = await self._capped(messages, tools if offered else None, offered,
                                          on_text)
        except _ToolsRefused as err:
            self.tools_refused = True
            log.warning("the LLM %s refuses requests with tools (%s): Valet goes on without "
                        "tools, it will only chat (valet doctor says more)", self.model, err)
            response = await self._capped(messages, None, frozenset(), on_text)
        if self.tools_refused and tools:
            response.quirks = (*response.quirks, Quirk.TOOLS_REFUSED)
        if response.tool_calls and not set(TEXT_CALLS) & set(response.quirks):
            self.native_calls = True
        if {Quirk.THINK_BLOCKS, Quirk.THINK_UNOPENED} & set(response.quirks):
            self.thought_first = True  # for good: a model that thinks aloud may drop the tag
        elif response.content and self.thought_first is None:
            self.thought_first = False
        return response

    async def _capped(self, messages: list[Message], tools: list[dict[str, Any]] | None,
                      offered: frozenset[str], on_text: TextSink | None) -> LLMResponse:
        """The request, its cap in a field the server reads: a refused field is replaced by
        the one the server names (or the next one it may read), once per field."""
        for _ in CAP_FIELDS:
            try:
                return await self._request(messages, tools, offered, on_text)
            except _CapRefused as err:
                log.warning("the LLM %s does not take the cap as %s (%s): sending it as %s "
                            "from now on", self.model, self.cap_field, err, err.instead)
                self.cap_field = err.instead
        return await self._request(messages, tools, offered, on_text)

    def cap(self) -> dict[str, int]:
        """The cap field of a request made now: none when uncapped, or when extra_body
        already holds one (the operator's word)."""
        if self.caps is None or any(name in self._extra for name in CAP_FIELDS):
            return {}
        return {self.cap_field: self.caps.now()}

    async def _request(self, messages: list[Message], tools: list[dict[str, Any]] | None,
                       offered: frozenset[str], on_text: TextSink | None) -> LLMResponse:
        cap = self.cap()
        body: dict[str, Any] = {"model": self.model, "messages": messages, **cap,
                                **self._extra}
        if tools:
            body["tools"] = tools
        rules = ReadingRules(offered, reads_text_calls(self.tool_calls, self.native_calls),
                             messages)
        try:
            if on_text is None:
                completion = await self._client.post(
                    "/chat/completions", body=body, cast_to=ChatCompletion)
                return _from_completion(completion, rules)
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            stream = await self._client.post(
                "/chat/completions", body=body, cast_to=ChatCompletion,
                stream=True, stream_cls=AsyncStream[ChatCompletionChunk])
            visible = VisibleText(on_text, tools_offered=bool(offered),
                                  thought_first=self.thought_first is not False)
            return await _collect_stream(stream, visible, rules)
        except openai.APIResponseValidationError as err:
            raise LLMMalformedResponseError(f"the endpoint's answer is not a completion: "
                                            f"{short_error(err)}") from err
        except openai.APIStatusError as err:
            if tools and refuses_tools(str(err)):
                raise _ToolsRefused(short_error(err)) from err
            instead = field_instead(str(err), self.cap_field) \
                if cap and 400 <= err.status_code < 500 else None
            if instead is not None:
                raise _CapRefused(instead, short_error(err)) from err
            error = classify_openai_error(err)
            if isinstance(error, LLMContextOverflowError):
                await self._learn_context(str(err))
            raise error from err
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            # A 200 whose body (or a stream event) is not JSON: the client's json() raises.
            # (With another content type the client returns the text instead: see
            # _from_completion. Its strict mode, off here, would raise the validation error.)
            raise LLMMalformedResponseError(
                f"the endpoint's answer is not JSON: {short_error(err)}") from err

    async def _learn_context(self, refusal: str) -> None:
        tokens = limit_from_refusal(refusal)
        if tokens is None or tokens == self.context_tokens:
            return
        log.warning("the LLM %s refused a request too long for its context window of %d "
                    "tokens: requests are built within it from now on", self.model, tokens)
        self.context_tokens = tokens
        if self.on_context_learnt is not None:
            await self.on_context_learnt(tokens)

    async def raw_answer(self, messages: list[Message], **fields: Any) -> dict[str, Any]:
        """The server's answer to one request (not streamed, no tools) as it came, unread:
        `valet doctor` looks at what the model wrote before any reading cleans it."""
        body = {key: value for key, value in {
            "model": self.model, "messages": messages, **self._extra, **fields}.items()
            if value is not None}  # a field given as None is left out
        try:
            answer = await self._client.post("/chat/completions", body=body, cast_to=object)
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err
        if not isinstance(answer, dict):
            raise LLMMalformedResponseError("the endpoint's answer is not a completion")
        return answer

    async def server_props(self) -> dict[str, Any] | None:
        """llama.cpp's /props (its chat template, what the template supports), at the
        server's root; None from a server that has none (the others)."""
        root = str(self._client.base_url).rstrip("/").removesuffix("/v1")
        try:
            props = await self._client.get(f"{root}/props", cast_to=object)
        except openai.OpenAIError as err:
            log.debug("no /props: %s", short_error(err))
            return None
        return props if isinstance(props, dict) else None

    async def list_models(self) -> list[str]:
        try:
            page = await self._client.models.list()
            return [m.id async for m in page]
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err

    async def model_entries(self) -> list[dict[str, Any]]:
        """The server's /models entries whole, with the fields a server adds (a context
        length: bot.llm.probe)."""
        try:
            page = await self._client.models.list()
            return [m.to_dict() async for m in page]
        except openai.OpenAIError as err:
            raise classify_openai_error(err) from err

    async def close(self) -> None:
        await self._client.close()


# Deeper than this, tool-call arguments are not something a person asked for: refusing them
# at the port keeps a recursive parse (and everything after it) safe.
MAX_ARGUMENT_DEPTH = 32


def _from_completion(completion: Any, rules: ReadingRules) -> LLMResponse:
    """Our response from the client's parse. Without strict validation the client hands back
    whatever the body held (a str for a non-JSON body, None for `null`, a model missing
    fields, arguments as an object), so every part is checked here."""
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
    objects = False
    for tc in getattr(message, "tool_calls", None) or []:
        function = getattr(tc, "function", None)
        if function is None:
            continue
        raw = getattr(function, "arguments", "")
        objects = objects or not isinstance(raw, str | None)
        calls.append(ToolCall(getattr(tc, "id", "") or f"call_{len(calls)}",
                              clean_text(getattr(function, "name", "") or ""),
                              clean_json_text(arguments_text(raw))))
    usage = usage_of(getattr(completion, "usage", None))
    content = getattr(message, "content", None)
    reading = read_answer(None if content is None else clean_text(content), calls,
                          _reasoning(message), rules,
                          (Quirk.ARGUMENTS_OBJECT,) if objects else ())
    _check_depth(reading.tool_calls)
    return LLMResponse(reading.content, reading.tool_calls, usage,
                       getattr(choice, "finish_reason", None), reading.reasoning,
                       reading.quirks)


def usage_of(raw: Any) -> TokenUsage:
    """The tokens of an answer, with those read from the endpoint's prompt cache
    (`prompt_tokens_details.cached_tokens`, where the endpoint says)."""
    if not raw:
        return TokenUsage()
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) if details is not None else 0
    return TokenUsage(getattr(raw, "prompt_tokens", 0) or 0,
                      getattr(raw, "completion_tokens", 0) or 0, cached or 0)


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


async def _collect_stream(stream: AsyncStream[ChatCompletionChunk], visible: VisibleText,
                          rules: ReadingRules) -> LLMResponse:
    text: list[str] = []
    thought: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    objects = False
    usage = TokenUsage()
    finish: str | None = None
    async for chunk in stream:
        if chunk.usage:
            usage = usage_of(chunk.usage)
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
                await visible.feed(clean_text(delta.content))
            if (reasoning := _reasoning(delta)) is not None:
                thought.append(reasoning)
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                if tc.id:
                    slot["id"] = tc.id
                if tc.function and tc.function.name:
                    slot["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    objects = objects or not isinstance(tc.function.arguments, str)
                    slot["arguments"] += arguments_text(tc.function.arguments) \
                        if objects else tc.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    tool_calls = [ToolCall(s["id"] or f"call_{i}", clean_text(s["name"]),
                           clean_json_text(arguments_text(s["arguments"])))
                  for i, s in sorted(calls.items())]
    # Cleaned whole, not per chunk: an emoji's two surrogate halves may come in two chunks.
    reading = read_answer(clean_text("".join(text)) or None, tool_calls,
                          "".join(thought) or None, rules,
                          (Quirk.ARGUMENTS_OBJECT,) if objects else ())
    _check_depth(reading.tool_calls)
    return LLMResponse(reading.content, reading.tool_calls, usage, finish, reading.reasoning,
                       reading.quirks)
