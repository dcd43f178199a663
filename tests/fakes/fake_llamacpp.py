"""A fake llama.cpp server (llama-server, as recorded in ../shared/data/real_llamacpp/), for
the real `openai` client: its quirks as the recordings show them.

- Slots: `slots` requests run at once (1: the recorded server); the others queue, waiting
  for a slot, and a client that gives up while queued or generating cancels its task (the
  server log's "cancel task").
- The model writes what `model(body)` (or the next scripted `Said`) says, one token per
  `token_seconds`. A `Said(stops=False)` never stops: it writes until the request's cap
  (`n_predict`, else `max_tokens`: what server.cpp reads; other fields such as
  `max_completion_tokens` are ignored, as unknown fields are) and ends with
  `finish_reason: "length"`; uncapped, until the context is full or the client leaves.
- The prompt cache: each slot keeps the tokens of its last prompt and what was generated;
  a request reuses the longest common prefix with it (`timings.cache_n`, and
  `usage.prompt_tokens_details.cached_tokens`), and reads only the rest
  (`timings.prompt_n`, `prompt_token_seconds` each). The prompt is rendered as a
  Hermes/Qwen2.5 template does: the tools inside the system block, at the start.
- Templates: `jinja_tools=False` (the model's own template) refuses tools with HTTP 500
  "tools param requires --jinja flag"; with tools (True), every tool call sent back must have
  JSON arguments, else HTTP 500 "Failed to parse tool call arguments as JSON" before any
  generation.
- /props says `total_slots` and `n_ctx`; /v1/models says `meta.n_ctx`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def tokens(text: str) -> list[str]:
    """The fake's tokenizer: runs of spaces, words, single other characters."""
    return _TOKEN.findall(text)


@dataclass
class Said:
    """What the model writes for one request."""

    text: str = "Hello! How can I help?"
    stops: bool = True  # False: it repeats `text` and never stops by itself
    # Tool calls (name, arguments), written as a tool template makes the model write them and
    # returned parsed, as llama.cpp with --jinja does (`text` is then ignored).
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Slot:
    cache: list[str] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def render(body: dict[str, Any]) -> str:
    """The prompt a Hermes/Qwen2.5-style template makes: the system block first, with the
    tools in it; then each message; then the generation prompt."""
    messages = list(body.get("messages") or [])
    system = ""
    if messages and messages[0].get("role") == "system":
        system = str(messages.pop(0).get("content") or "")
    tools = body.get("tools") or []
    if tools:
        system += "\n\n# Tools\n<tools>\n" + "\n".join(
            json.dumps(t.get("function", t), sort_keys=True) for t in tools) + "\n</tools>"
    parts = [f"<|im_start|>system\n{system}<|im_end|>\n"] if system else []
    for msg in messages:
        content = msg.get("content")
        text = content if isinstance(content, str) else "" if content is None \
            else json.dumps(content)
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") or {}
            text += f"\n<tool_call>\n{fn.get('name')} {fn.get('arguments')}\n</tool_call>"
        parts.append(f"<|im_start|>{msg.get('role')}\n{text}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class FakeLlamaCpp:
    def __init__(self, *, slots: int = 1, jinja_tools: bool = True, n_ctx: int = 8192,
                 token_seconds: float = 0.0005, prompt_token_seconds: float = 0.0) -> None:
        self.n_ctx = n_ctx
        self.jinja_tools = jinja_tools
        self.token_seconds = token_seconds
        self.prompt_token_seconds = prompt_token_seconds
        self.slots = [Slot() for _ in range(slots)]
        self.model: Callable[[dict[str, Any]], Said] = lambda body: Said()
        self._script: deque[Said] = deque()
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []  # each request's outcome, in arrival order
        self.cancelled = 0  # tasks cancelled because their client left
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *said: Said) -> None:
        self._script.extend(said)

    async def __aenter__(self) -> FakeLlamaCpp:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/props", self._props)
        # A client that leaves cancels its handler: the task is cancelled, as llama.cpp does.
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True,
                                     shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _props(self, _: web.Request) -> web.Response:
        return web.json_response({"total_slots": len(self.slots), "n_ctx": self.n_ctx,
                                  "chat_template": "chatml",
                                  "chat_template_caps": {"supports_tools": self.jinja_tools}})

    async def _models(self, _: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": "smollm2", "object": "model", "owned_by": "llamacpp",
             "meta": {"n_ctx_train": 8192, "n_ctx": self.n_ctx}}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        outcome: dict[str, Any] = {"status": None}
        self.answers.append(outcome)
        refusal = self._refusal(body)
        if refusal is not None:
            outcome["status"] = 500
            return web.json_response({"error": {"code": 500, "message": refusal,
                                                "type": "server_error"}}, status=500)
        said = self._script.popleft() if self._script else self.model(body)
        slot = min(self.slots, key=lambda s: s.lock.locked())
        try:
            async with slot.lock:
                return await self._generate(request, body, said, slot, outcome)
        except asyncio.CancelledError:
            self.cancelled += 1
            outcome["status"] = "cancelled"
            raise

    def _refusal(self, body: dict[str, Any]) -> str | None:
        if body.get("tools") and not self.jinja_tools:
            return "tools param requires --jinja flag"
        if not self.jinja_tools:
            return None
        for msg in body.get("messages") or ():
            for call in msg.get("tool_calls") or ():
                raw = (call.get("function") or {}).get("arguments")
                try:
                    json.loads(raw if isinstance(raw, str) else json.dumps(raw))
                except ValueError:
                    text = str(raw)
                    return ("Failed to parse tool call arguments as JSON: [json.exception."
                            "parse_error.101] parse error at line 1, column 2: syntax error "
                            "while parsing value - invalid literal; last read: "
                            f"'{text[:2]}'")
        return None

    async def _generate(self, request: web.Request, body: dict[str, Any], said: Said,
                        slot: Slot, outcome: dict[str, Any]) -> web.StreamResponse:
        prompt = tokens(render(body))
        cache_n = common_prefix(prompt, slot.cache)
        if cache_n == len(prompt):  # llama.cpp always evaluates the last token again
            cache_n = max(0, cache_n - 1)
        slot.cache = prompt[:cache_n]
        started = time.perf_counter()
        await asyncio.sleep(self.prompt_token_seconds * (len(prompt) - cache_n))
        slot.cache = list(prompt)
        prompt_ms = (time.perf_counter() - started) * 1000
        cap = body.get("n_predict", body.get("max_tokens"))
        limit = cap if isinstance(cap, int) and cap >= 0 else self.n_ctx - len(prompt)
        calls = [{"id": f"call{len(self.requests)}{i}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(arguments)}}
                 for i, (name, arguments) in enumerate(said.calls)]
        # What the model writes for its calls is what the template renders them as later.
        written_text = "".join(f"\n<tool_call>\n{c['function']['name']} "
                               f"{c['function']['arguments']}\n</tool_call>" for c in calls) \
            if calls else said.text
        words = tokens(written_text) or [" "]
        written: list[str] = []
        generating = time.perf_counter()
        finish = "stop"
        while True:
            if said.stops and len(written) >= len(words):
                break
            if len(written) >= limit:
                finish = "length"
                break
            written.append(words[len(written) % len(words)])
            slot.cache.append(written[-1])
            if self.token_seconds:
                await asyncio.sleep(self.token_seconds)
        text = "".join(written)
        if calls and finish == "stop":
            finish, text = "tool_calls", ""
        else:
            calls = []
        outcome.update(status=200, finish_reason=finish, cache_n=cache_n,
                       prompt_n=len(prompt) - cache_n, predicted_n=len(written))
        timings = {"cache_n": cache_n, "prompt_n": len(prompt) - cache_n,
                   "prompt_ms": prompt_ms, "predicted_n": len(written),
                   "predicted_ms": (time.perf_counter() - generating) * 1000}
        usage = {"completion_tokens": len(written), "prompt_tokens": len(prompt),
                 "total_tokens": len(prompt) + len(written),
                 "prompt_tokens_details": {"cached_tokens": cache_n}}
        base = {"created": int(time.time()), "model": body.get("model") or "smollm2",
                "system_fingerprint": "b0-unknown", "id": f"chatcmpl-{len(self.requests)}"}
        if not body.get("stream"):
            return web.json_response({
                "choices": [{"finish_reason": finish, "index": 0,
                             "message": {"role": "assistant", "content": text or None,
                                         **({"tool_calls": calls} if calls else {})}}],
                **base, "object": "chat.completion", "usage": usage, "timings": timings})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(data: dict[str, Any]) -> None:
            await response.write(f"data: {json.dumps(data)}\n\n".encode())

        chunk = {**base, "object": "chat.completion.chunk"}
        delta: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
        await send({**chunk, "choices": [{"index": 0, "finish_reason": None,
                                          "delta": delta}]})
        await send({**chunk, "choices": [{"index": 0, "finish_reason": finish,
                                          "delta": {}}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            await send({**chunk, "choices": [], "usage": usage, "timings": timings})
        with contextlib.suppress(ConnectionError):
            await response.write(b"data: [DONE]\n\n")
        return response
