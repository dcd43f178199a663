"""Fake OpenAI-compatible Chat Completions server for tests (aiohttp.web).

The real ``openai.AsyncOpenAI`` client talks to it through ``base_url``::

    async with FakeOpenAI() as fake:
        fake.script(Reply(content="hi"), Fail(429, retry_after=0.5))
        client = AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)

``/v1/embeddings`` answers deterministic vectors (a hashed bag of words, see
``bag_of_words``; replace ``fake.vector_for`` to choose them); set ``fake.embeddings_down``
to an HTTP status to make it fail.

Standalone: ``python -m tests.fakes.fake_openai --port 8999 --reply "text"``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import hashlib
import inspect
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.dialects import REFUSALS, Wire, render
from tests.fakes.recordings import Recorded, llamacpp_refusal, respond
from tests.openai_schema import problems

__all__ = ["ContextOverflow", "Fail", "FakeOpenAI", "Hang", "Raw", "Recorded", "Reply",
           "ToolCall"]


@dataclass
class ToolCall:
    name: str
    # dict -> json.dumps'ed; str -> sent verbatim (may be invalid JSON)
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # auto "call_<n>" when None

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    # (prompt_tokens, completion_tokens), or with the prompt tokens read from the cache
    # (prompt_tokens_details.cached_tokens, counted in prompt_tokens as OpenAI does).
    usage: tuple[int, int] | tuple[int, int, int] | None = None
    delay: float = 0.0
    finish_reason: str | None = None  # auto: "tool_calls" if tool_calls else "stop"
    reasoning: str | None = None  # the model's thinking: where it goes is FakeOpenAI.thinking
    # A recorded answer: the assistant message exactly as a server sent it (content,
    # tool_calls, reasoning fields); the fields above it then only give usage and delay.
    message: dict[str, Any] | None = None
    chunk_size: int | None = None  # streamed content in pieces this long (None: by word)


@dataclass
class Fail:
    status: int
    retry_after: float | None = None
    message: str | None = None
    code: str | None = None
    type: str | None = None


@dataclass
class Hang:
    seconds: float  # sleep, then answer 500 (returns early when the server shuts down)


@dataclass
class ContextOverflow:
    max_tokens: int = 8192


@dataclass
class Raw:
    """A response body sent exactly as given (a proxy's HTML error page with status 200, a
    truncated JSON document, `null`...)."""

    body: str
    status: int = 200
    content_type: str = "text/html"


Item = Reply | Fail | Hang | ContextOverflow | Raw | Recorded
Responder = Callable[[dict[str, Any]], Item | Awaitable[Item]]

_SERVER_ERROR: tuple[str, str, str | None] = ("server_error", "Server error.", None)
_DEFAULT_ERRORS: dict[int, tuple[str, str, str | None]] = {  # status -> (type, message, code)
    400: ("invalid_request_error", "Bad request.", None),
    401: ("invalid_request_error", "Incorrect API key provided.", "invalid_api_key"),
    403: ("invalid_request_error", "Permission denied.", None),
    404: ("invalid_request_error", "Not found.", "model_not_found"),
    429: ("requests", "Rate limit reached. Please try again later.", "rate_limit_exceeded"),
}


def _error(
    status: int, message: str, code: str | None = None, type_: str = "server_error", **kw: Any
) -> web.Response:
    error = {"message": message, "type": type_, "param": kw.get("param"), "code": code}
    return web.json_response({"error": error}, status=status, headers=kw.get("headers"))


EMBEDDING_DIMENSIONS = 64


def bag_of_words(text: str) -> list[float]:
    """A deterministic vector: each lower-case word adds 1 to a hashed dimension."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % EMBEDDING_DIMENSIONS] += 1.0
    return vector


def _text_len(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):  # content parts
        return sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    return 0


_DATA_URL = re.compile(r"data:(image/[\w.+-]+);base64,(.*)", re.S)


def images_in(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Every image part of a request, in order, as (mime type, bytes). Raises ValueError the
    way the real API refuses one: an image outside a user message, or a URL that is not a
    base64 data URL of an image."""
    found: list[tuple[str, bytes]] = []
    for msg in body.get("messages") or []:
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            if msg.get("role") != "user":
                raise ValueError("Image URLs are only allowed for messages with role 'user'")
            match = _DATA_URL.fullmatch(str((part.get("image_url") or {}).get("url") or ""))
            if match is None:
                raise ValueError("Invalid image URL: expected a base64 data URL of an image")
            try:
                found.append((match.group(1), base64.b64decode(match.group(2), validate=True)))
            except binascii.Error as err:
                raise ValueError(f"Invalid base64 image data: {err}") from err
    return found


class FakeOpenAI:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.responder: Responder | None = None
        self.requests: list[dict[str, Any]] = []
        self.images: list[list[tuple[str, bytes]]] = []  # per request: its image parts
        self.calls = 0
        self._script: deque[Item] = deque()
        self._ids = itertools.count(1)
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        # Speech to text: what /audio/transcriptions answers, and the uploads it received.
        self.transcript = "This is a voice note."
        self.transcriptions: list[dict[str, Any]] = []
        self.transcription_auth: list[str] = []  # the Authorization header of each upload
        self.transcription_files: list[str] = []  # the file name each upload was given
        # Embeddings: how texts become vectors, what was asked, and a failure to answer with.
        self.vector_for: Callable[[str], list[float]] = bag_of_words
        self.embedding_requests: list[dict[str, Any]] = []
        self.embeddings_down: int | None = None  # an HTTP status (503...) while set
        # The server's dialect (tests/fakes/dialects.py): how it writes tool calls and the
        # model's thinking; a refusal of tools ("ollama", "vllm", "llama.cpp"); extra fields
        # of its /v1/models entry (a context length: vLLM's max_model_len, llama.cpp's meta).
        self.dialect = "openai"
        self.thinking = "field"
        self.chunk_size: int | None = None
        self.refuse_tools: str | None = None
        self.model_card: dict[str, Any] = {}
        # llama.cpp's /props at the server's root (its chat template and what the template
        # supports); None: 404, as every other server answers.
        self.props: dict[str, Any] | None = None
        # As strict as OpenAI about a request's messages (tests/openai_schema.py): a call
        # without its result, a result without its call, arguments that are not a string.
        self.strict = False
        self.refused: list[str] = []  # what strictness refused, for the test to show
        # As llama.cpp with a tool template: a history call whose arguments are not JSON is
        # refused with HTTP 500 (tests/fakes/recordings.py).
        self.checks_call_arguments = False

    # -- public API -------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def script(self, *items: Item) -> None:
        self._script.extend(items)

    def reset(self) -> None:
        self._script.clear()
        self.requests.clear()
        self.images.clear()
        self.calls = 0
        self._ids = itertools.count(1)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/props", self._props)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._closing = asyncio.Event()
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        self._closing.set()  # wake sleeping Hang/delay handlers so cleanup is immediate
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- handlers ---------------------------------------------------------
    async def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), seconds)

    async def _models(self, _: web.Request) -> web.Response:
        model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake",
                 **self.model_card}
        return web.json_response({"object": "list", "data": [model]})

    async def _props(self, _: web.Request) -> web.Response:
        if self.props is None:
            return web.Response(status=404, text="Not Found")
        return web.json_response(self.props)

    async def _transcribe(self, request: web.Request) -> web.Response:
        self.transcription_auth.append(request.headers.get("Authorization", ""))
        form = await request.post()
        upload = form.get("file")
        audio = upload.file.read() if hasattr(upload, "file") else b""
        self.transcription_files.append(str(getattr(upload, "filename", "") or ""))
        self.transcriptions.append({"model": form.get("model"), "audio": audio})
        if not audio:
            return _error(400, "No audio file was uploaded.", type_="invalid_request_error")
        return web.json_response({"text": self.transcript})

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.embedding_requests.append(body)
        if self.embeddings_down is not None:
            type_, message, code = _DEFAULT_ERRORS.get(self.embeddings_down, _SERVER_ERROR)
            return _error(self.embeddings_down, message, code, type_)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i, "embedding": self.vector_for(t)}
                for i, t in enumerate(texts)]
        tokens = sum(len(t.split()) for t in texts)
        return web.json_response({"object": "list", "data": data,
                                  "model": body.get("model") or "fake-embedding",
                                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            body = {"_invalid_json": await request.text()}
        # Counted once the whole request is in, and its scripted answer taken below with no
        # await in between: a test that kills the client when `calls` reaches n knows the
        # n-th answer was taken (a large request's body may arrive after its headers).
        self.calls += 1
        n = self.calls
        self.requests.append(body)
        try:
            self.images.append(images_in(body))
        except ValueError as err:
            self.images.append([])
            return _error(400, str(err), type_="invalid_request_error")
        if self.strict and (found := problems(body.get("messages"))):
            self.refused.append(found[0])
            return _error(400, f"Invalid request: {found[0]}", type_="invalid_request_error",
                          param="messages")
        if self.checks_call_arguments and (refusal := llamacpp_refusal(body)) is not None:
            return refusal
        if self.refuse_tools and body.get("tools"):
            status, error = REFUSALS[self.refuse_tools]
            return web.json_response(error, status=status)
        item: Item | None = None
        if self._script:
            item = self._script.popleft()
        elif self.responder is not None:
            result = self.responder(body)
            item = await result if inspect.isawaitable(result) else result
        if item is None:
            return _error(500, "fake_openai: script exhausted")
        if isinstance(item, Fail):
            type_, message, code = _DEFAULT_ERRORS.get(item.status, _SERVER_ERROR)
            headers = {} if item.retry_after is None else {"Retry-After": f"{item.retry_after:g}"}
            msg, code, type_ = item.message or message, item.code or code, item.type or type_
            return _error(item.status, msg, code, type_, headers=headers)
        if isinstance(item, Recorded):
            return await respond(request, body, item)
        if isinstance(item, Raw):
            return web.Response(text=item.body, status=item.status,
                                content_type=item.content_type)
        if isinstance(item, Hang):
            await self._sleep(item.seconds)
            return _error(500, "fake_openai: hang elapsed")
        if isinstance(item, ContextOverflow):
            tokens = item.max_tokens + 1 + self._prompt_tokens(body)
            msg = (
                f"This model's maximum context length is {item.max_tokens} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
            )
            code, type_ = "context_length_exceeded", "invalid_request_error"
            return _error(400, msg, code, type_, param="messages")
        await self._sleep(item.delay)
        if body.get("stream"):
            return await self._stream(request, body, item, n)
        return web.json_response(
            self._completion(body, item, n), headers={"x-request-id": f"req_{n}"}
        )

    # -- response builders ------------------------------------------------
    @staticmethod
    def _prompt_tokens(body: dict[str, Any]) -> int:
        msgs = body.get("messages") or []
        return sum(_text_len(m.get("content")) for m in msgs if isinstance(m, dict)) // 4

    def _wire(self, reply: Reply) -> Wire:
        """The answer as this server writes it: a recorded message as it is, else the
        scripted one in the server's dialect."""
        if reply.message is not None:
            m = reply.message
            return Wire(m.get("content"), list(m.get("tool_calls") or []),
                        m.get("reasoning_content") or m.get("reasoning"))
        calls = [(tc.id or f"call_{next(self._ids)}", tc.name, tc.arguments)
                 for tc in reply.tool_calls]
        return render(reply.content, calls, reply.reasoning, dialect=self.dialect,
                      thinking=self.thinking)

    def _usage(self, body: dict[str, Any], reply: Reply, wire: Wire) -> dict[str, Any]:
        p, c, *cached = reply.usage or (self._prompt_tokens(body),
                                        len(wire.content or "") // 4 + 1)
        usage: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c,
                                 "total_tokens": p + c}
        if cached:
            usage["prompt_tokens_details"] = {"cached_tokens": cached[0]}
        return usage

    @staticmethod
    def _finish(reply: Reply, wire: Wire) -> str:
        return reply.finish_reason or wire.finish_reason

    def _completion(self, body: dict[str, Any], reply: Reply, n: int) -> dict[str, Any]:
        wire = self._wire(reply)
        message: dict[str, Any] = {"role": "assistant", "content": wire.content, "refusal": None}
        if reply.message is not None:
            message = {"role": "assistant", **reply.message}
        else:
            if wire.reasoning:
                message["reasoning_content"] = wire.reasoning
            if wire.tool_calls:
                message["tool_calls"] = wire.tool_calls
        return {
            "id": f"chatcmpl-fake{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "fake-model",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": self._finish(reply, wire)}],
            "usage": self._usage(body, reply, wire),
        }

    async def _stream(
        self, request: web.Request, body: dict[str, Any], reply: Reply, n: int
    ) -> web.StreamResponse:
        base = {
            "id": f"chatcmpl-fake{n}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or "fake-model",
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        wire = self._wire(reply)
        chunks = [chunk({"role": "assistant", "content": ""})]
        if wire.reasoning:
            chunks.append(chunk({"reasoning_content": wire.reasoning}))
        if wire.content:
            chunks += [chunk({"content": piece})
                       for piece in _pieces(wire.content, reply.chunk_size or self.chunk_size)]
        for i, tc in enumerate(wire.tool_calls):
            fn, args = tc["function"], tc["function"]["arguments"]
            head = {"index": i, "id": tc.get("id"), "type": "function",
                    "function": {"name": fn["name"], "arguments": ""}}  # fmt: skip
            chunks.append(chunk({"tool_calls": [head]}))
            if not isinstance(args, str):  # an object: sent whole, as such a server does
                whole = {"index": i, "function": {"arguments": args}}
                chunks.append(chunk({"tool_calls": [whole]}))
                continue
            mid = max(1, len(args) // 2)
            chunks += [
                chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
                for part in (args[:mid], args[mid:])
            ]
        chunks.append(chunk({}, self._finish(reply, wire)))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": self._usage(body, reply, wire)})

        headers = {"Content-Type": "text/event-stream", "x-request-id": f"req_{n}"}
        resp = web.StreamResponse(headers=headers)
        await resp.prepare(request)
        with contextlib.suppress(ConnectionError):
            for c in chunks:
                await resp.write(f"data: {json.dumps(c)}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        return resp


def _pieces(text: str, size: int | None) -> list[str]:
    """Streamed content: by word, or in pieces of `size` characters (a tag split in two)."""
    if size:
        return [text[i:i + size] for i in range(0, len(text), size)]
    return re.split(r"(?<=\s)(?=\S)", text)


async def _serve(port: int, text: str) -> None:
    async with FakeOpenAI(port=port) as fake:
        fake.responder = lambda _body: Reply(content=text)
        print(fake.base_url, flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI Chat Completions server")
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--reply", default="Hello from fake_openai.")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port, args.reply))


if __name__ == "__main__":
    main()
