"""Prompt tokens per turn with every built-in capability configured (weather on Open-Meteo, a
calendar connected): a "hi", a weather question, and "what's on tomorrow?", each with lean
tool exposure (capabilities) and, for comparison, every tool on every request ("all"); the
default loop mode (auto: a greeting is answered without tool schemas) and, for comparison,
react (every request carries tools).

Tokens are estimated as the ContextManager does (characters / chars_per_token, plus its
per-message overhead), with the tools' JSON counted the same way. Goal: "hi" <= 600 with
every capability on; the floor is the system prompt alone (what no mode can save).
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.config import load_settings
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from bot.credentials import new_key
from bot.loop.context import ContextManager
from tests.fakes.fake_open_meteo import FakeOpenMeteo
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall

GOAL_HI = 600
NOW = datetime(2026, 3, 30, 5, 0, tzinfo=UTC)
FEED = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//bench//EN
BEGIN:VEVENT
UID:standup-1
DTSTAMP:20260301T000000Z
DTSTART:20260316T083000Z
DTEND:20260316T084500Z
RRULE:FREQ=DAILY
SUMMARY:Standup
END:VEVENT
END:VCALENDAR
"""

TURNS: dict[str, tuple[str, list[Reply]]] = {
    "hi": ("hi", [Reply(content="Hello! What can I do for you?")]),
    "weather": ("What's the weather in Lyon?", [
        Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
        Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
        Reply(content="Overcast, 4°C; rain from 11:00.")]),
    "tomorrow": ("What's on tomorrow?", [
        Reply(tool_calls=[ToolCall("open_capability", {"name": "calendar"})]),
        Reply(tool_calls=[ToolCall("list_events", {"day": "tomorrow"})]),
        Reply(content="Standup at 10:30.")]),
}
# With every tool shown, the model skips the opening step.
DIRECT = {"weather": 1, "tomorrow": 1}


def request_tokens(request: dict[str, Any], context: ContextManager) -> tuple[int, int]:
    """(messages, tools) tokens of one request."""
    messages = context.estimate_tokens(request["messages"])
    tools = int(len(json.dumps(request.get("tools") or [])) / context.cfg.chars_per_token)
    return messages, tools


async def _feed_server(stack: AsyncExitStack) -> str:
    app = web.Application()

    async def feed(request: web.Request) -> web.Response:
        return web.Response(text=FEED, content_type="text/calendar")

    app.router.add_get("/cal.ics", feed)
    runner = web.AppRunner(app)
    await runner.setup()
    stack.push_async_callback(runner.cleanup)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return f"http://127.0.0.1:{runner.addresses[0][1]}/cal.ics"


async def measure(exposure: str, folder: Path, llm: FakeOpenAI, meteo: FakeOpenMeteo,
                  feed: str, mode: str = "auto") -> dict[str, list[tuple[int, int]]]:
    from bot.app import App

    config = folder / f"{exposure}-{mode}.yaml"
    config.write_text(f"tool_exposure: {exposure}\nloop:\n  mode: {mode}\ntools:\n"
                      f"  weather:\n    api_url: {meteo.base_url}\n")
    env = {"VALET_DATABASE_URL": f"sqlite:///{folder}/{exposure}-{mode}.db",
           "VALET_LLM_BASE_URL": llm.base_url, "VALET_LLM_MODEL": "m",
           "VALET_LLM_API_KEY": "k"}
    settings = load_settings(str(config), env=env)
    # A calendar is connected before the app that is measured starts (capabilities are
    # checked at start-up).
    # Each turn is measured in a fresh conversation: one person per turn.
    first = await App.build(settings, clock=FakeClock(NOW))
    for name in TURNS:
        await first.users.ensure(f"bench-{name}", timezone="Europe/Paris", at=NOW)
        await first.services.credentials.put(
            f"bench-{name}", "calendar", {"kind": "ics", "url": feed}, NOW)
    await first.close()
    app = await App.build(settings, clock=FakeClock(NOW))
    context = ContextManager(settings.loop_config())
    found: dict[str, list[tuple[int, int]]] = {}
    try:
        for name, (text, replies) in TURNS.items():
            llm.reset()
            llm.script(*(replies[DIRECT.get(name, 0):] if exposure == "all" else replies))
            await app.orchestrator.handle_message(Inbound(
                user_id=f"bench-{name}", channel="telegram", text=text,
                received_at=NOW))
            found[name] = [request_tokens(r, context) for r in llm.requests]
            if name == "hi":  # the floor: the system prompt alone
                system = llm.requests[0]["messages"][:1]
                found["floor"] = [(context.estimate_tokens(system), 0)]
    finally:
        await app.close()
    return found


async def run() -> list[str]:
    os.environ.setdefault("VALET_SECRET_KEY", new_key())
    lines = ["prompt tokens per turn (estimated: chars / 4 + per-message overhead; tools as "
             "JSON), every built-in capability configured"]
    async with AsyncExitStack() as stack:
        llm = await stack.enter_async_context(FakeOpenAI())
        meteo = await stack.enter_async_context(FakeOpenMeteo())
        feed = await _feed_server(stack)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for exposure, mode in (("capabilities", "auto"), ("capabilities", "react"),
                               ("all", "auto")):
            found = await measure(exposure, folder, llm, meteo, feed, mode)
            floor = found.pop("floor")[0][0]
            label = f"{exposure}/{mode}"
            for name, requests in found.items():
                steps = " + ".join(f"{m + t} ({m} messages, {t} tools)" for m, t in requests)
                total = sum(m + t for m, t in requests)
                lines.append(f"  {label:18s} {name:8s} {len(requests)} request(s): {steps}"
                             f" = {total}")
            if (exposure, mode) == ("capabilities", "auto"):
                hi = sum(m + t for m, t in found["hi"])
                lines.append(f"  goal: \"hi\" <= {GOAL_HI}: {hi} "
                             f"({'met' if hi <= GOAL_HI else 'NOT MET'}); floor (the system "
                             f"prompt alone): {floor}")
    return lines
