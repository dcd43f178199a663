"""A recording proxy between Valet and the real server (as the recordings in
shared/data/real_llamacpp were made): every request passes through unchanged and is kept with
what the server answered, read back from JSON or from the streamed events, so a story can say
what the model did (its text, its native calls, its tokens) beside what the person saw."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web


@dataclass
class Exchange:
    path: str
    request: dict[str, Any]
    status: int
    seconds: float
    content: str = ""
    calls: list[str] = field(default_factory=list)  # names of the native tool_calls
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # llama.cpp's timings.cache_n: prompt tokens it did not re-read
    error: str = ""

    @property
    def offered(self) -> list[str]:
        return [t["function"]["name"] for t in self.request.get("tools") or ()]


class RecordingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.base_url = ""

    async def __aenter__(self) -> RecordingProxy:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        # A request Valet gives up on (its timeout) is given up upstream too, as the server
        # would see it without the proxy: llama.cpp then cancels the generation.
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._http is not None:
            await self._http.close()

    @property
    def completions(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.path.endswith("/chat/completions")]

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._http is not None
        raw = await request.read()
        started = time.monotonic()
        async with self._http.request(
                request.method, self.upstream + request.path_qs, data=raw or None,
                headers={"Content-Type": request.headers.get("Content-Type",
                                                             "application/json")}) as resp:
            body = await resp.read()
            kind = resp.headers.get("Content-Type", "application/json")
            status = resp.status
        if request.path.endswith("/chat/completions"):
            exchange = Exchange(request.path, json.loads(raw or b"{}"), status,
                                time.monotonic() - started)
            _read_answer(exchange, body.decode("utf-8", "replace"))
            self.exchanges.append(exchange)
        return web.Response(body=body, status=status, headers={"Content-Type": kind})


def _read_answer(exchange: Exchange, text: str) -> None:
    if exchange.status != 200:
        exchange.error = text[:500]
        return
    if exchange.request.get("stream"):
        for line in text.splitlines():
            if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                _add(exchange, json.loads(line[6:]), "delta")
    else:
        _add(exchange, json.loads(text), "message")


def _add(exchange: Exchange, chunk: dict[str, Any], part: str) -> None:
    for choice in chunk.get("choices") or ():
        message = choice.get(part) or {}
        exchange.content += message.get("content") or ""
        for call in message.get("tool_calls") or ():
            name = (call.get("function") or {}).get("name")
            if name:
                exchange.calls.append(name)
        exchange.finish_reason = choice.get("finish_reason") or exchange.finish_reason
    usage = chunk.get("usage") or {}
    exchange.prompt_tokens = usage.get("prompt_tokens", exchange.prompt_tokens)
    exchange.completion_tokens = usage.get("completion_tokens", exchange.completion_tokens)
    timings = chunk.get("timings") or {}
    exchange.cached_tokens = timings.get("cache_n", exchange.cached_tokens)
