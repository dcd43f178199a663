"""Hostile input: what a page built to be slow costs, and whether the event loop notices.

  html.parser (the old extractor) on "<a" * N: quadratic, on the event loop
  lxml in the worker on pages built against each kind of parser, up to the 2 MB download cap
  the worker's round trip: first call (starts the process) and warm calls
  web_fetch of hostile pages from a loopback server, while a 10 ms ticker runs on the loop:
              fetch time and the longest the loop was held (the ticker's worst lateness)
  clean_text on a 2 MB message full of things to clean
  a Telegram reply of "*_" markdown, 32 and 80 KB: rendered on the loop (the floor: what it
              would hold the loop) and as the channel renders it (a worker above 8 KB)

Floors: what the work costs on the event loop without the protection (the old parser, the
render on the loop). Goal: the event loop is never held longer than the stall monitor's
threshold (250 ms) by any of it.
"""

from __future__ import annotations

import asyncio
import random
import time
from html.parser import HTMLParser

from aiohttp import web
from aiohttp.test_utils import TestServer

from agents.tools import web_fetch
from agents.tools.html_text import page_text
from bot.contracts.tool_context import ToolExecutionContext
from bot.plumbing.offload import WorkerPool
from bot.text.sanitize import clean_text
from channels.telegram.adapter import rendered
from channels.telegram.render import message_parts
from tests.bench.size import sized

PAGE = sized(2_000_000, 100_000)  # bytes of each hostile page
GOAL_HELD_MS = 250.0

HOSTILE = {
    '"<a" * N': lambda n: "<a" * (n // 2),
    '"<div>" * N': lambda n: "<div>" * (n // 5),
    '"<b><i>" * N': lambda n: "<b><i>" * (n // 6),
    '"<p>x" * N': lambda n: "<p>x" * (n // 4),
    '"<table><td>x" * N': lambda n: "<table><td>x" * (n // 12),
}


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms"


def old_parser(size: int) -> float:
    started = time.perf_counter()
    parser = HTMLParser()
    parser.feed("<a" * (size // 2))
    parser.close()
    return time.perf_counter() - started


async def run() -> list[str]:
    out = ["hostile input"]
    held: list[float] = []  # the longest the event loop was held, each measure (seconds)
    for size in (sized(20_000, 2_000), sized(40_000, 4_000), sized(80_000, 8_000)):
        out.append(f"  html.parser (old) '<a' * N, {size // 1000:5d} KB: "
                   f"{_ms(old_parser(size))}  (the floor: on the event loop)")
    pool = WorkerPool(max_workers=1)
    try:
        started = time.perf_counter()
        await pool.run(page_text, b"<p>hi", None, timeout=30)
        first = time.perf_counter() - started
        warm = []
        for _ in range(20):
            started = time.perf_counter()
            await pool.run(page_text, b"<p>hi", None, timeout=30)
            warm.append(time.perf_counter() - started)
        out.append(f"  worker round trip: first call {_ms(first)} (starts the process), "
                   f"warm {_ms(sorted(warm)[len(warm) // 2])} (median of 20)")
        for name, build in HOSTILE.items():
            body = build(PAGE).encode()
            started = time.perf_counter()
            page = await pool.run(page_text, body, None, timeout=60)
            out.append(f"  lxml in the worker, {name:22} {PAGE // 1000} KB: "
                       f"{_ms(time.perf_counter() - started)}"
                       + ("  (nesting capped)" if page.too_deep else ""))
    finally:
        pool.close()
    out += await _fetch_while_ticking(held)
    out += await _render_while_ticking(held)
    worst = max(held) * 1000
    out.append(f"  goal: the event loop held < {GOAL_HELD_MS:.0f} ms: at most {worst:.1f} ms "
               f"({'met' if worst < GOAL_HELD_MS else 'NOT MET'})")
    dirty = "word \x00\ud800\x1b " * sized(250_000, 10_000)
    started = time.perf_counter()
    clean_text(dirty)
    out.append(f"  clean_text, {len(dirty) / 1e6:.1f} M chars to clean: "
               f"{_ms(time.perf_counter() - started)}")
    return out


async def _fetch_while_ticking(held: list[float]) -> list[str]:
    pages = {"a150k": "<a" * sized(150_000, 10_000), "p2mb": "<p>x" * (PAGE // 4)}
    app = web.Application()
    for path, body in pages.items():
        app.router.add_get(f"/{path}", _serve(body))
    out = []
    async with TestServer(app, host="127.0.0.1") as server:
        ctx = ToolExecutionContext(user_id="bench", settings={"allow_private_addresses": True})
        for path, body in pages.items():
            lag: list[float] = [0.0]
            stop = asyncio.Event()
            ticker = asyncio.create_task(_tick(stop, lag))
            started = time.perf_counter()
            await web_fetch.web_fetch(ctx, f"http://127.0.0.1:{server.port}/{path}")
            took = time.perf_counter() - started
            stop.set()
            await ticker
            worst = max(lag)
            held.append(worst)
            out.append(f"  web_fetch {len(body) // 1000:5d} KB {body[:4]!r}...: fetch {_ms(took)}, "
                       f"event loop held at most {_ms(worst)}")
    return out


async def _render_while_ticking(held: list[float]) -> list[str]:
    rng = random.Random(7)
    out = []
    for size in (sized(32_000, 4_000), sized(80_000, 9_000)):
        text = "".join(rng.choice("*_ ab") for _ in range(size))
        started = time.perf_counter()
        message_parts(text, ())
        inline = time.perf_counter() - started
        lag: list[float] = [0.0]
        stop = asyncio.Event()
        ticker = asyncio.create_task(_tick(stop, lag))
        started = time.perf_counter()
        await rendered(text, ())
        took = time.perf_counter() - started
        stop.set()
        await ticker
        held.append(max(lag))
        out.append(f"  telegram render '*_' {size // 1000:3d} KB: on the loop (floor) "
                   f"{_ms(inline)}; "
                   f"as sent {_ms(took)}, event loop held at most {_ms(max(lag))}")
    return out


async def _tick(stop: asyncio.Event, lag: list[float]) -> None:
    """Sleeps 10 ms again and again, noting how late each wake-up was."""
    while not stop.is_set():
        due = time.perf_counter() + 0.01
        await asyncio.sleep(0.01)
        lag.append(time.perf_counter() - due)


def _serve(body: str):  # type: ignore[no-untyped-def]
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type="text/html")
    return handler
