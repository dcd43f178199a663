"""Prompt tokens and LLM requests per turn, with every built-in capability configured (weather
on Open-Meteo, a calendar connected, an SMS sender for "text Ana"):

    hi                 a greeting (auto mode: answered without tool schemas)
    six times seven    "what is six times seven": the calculator (time capability)
    remind me          "remind me tomorrow at 3pm to call mom": the reminder agent (tasks)
    weather            "what's the weather in Lyon": the weather tool
    text Ana           "text Ana that I'm late": message_someone asks for approval (the card),
                       then "yes" runs it and the model says so (two turns, counted together)
    tomorrow           "what's on tomorrow?": the calendar

The LLM is a fake that behaves as a model does: it calls the one tool the turn needs when that
tool is in front of it, else opens its capability with `open_capability` first. Each turn is
measured three ways in the same run: the capability router on (the default), the router off
(`capability_router: false`: the model opens each capability itself, one request more), and
every tool on every request (`tool_exposure: all`); beside them, what the same turn cost on
main before the router (e82a0ac: 3 requests for every one-tool turn). Tokens are estimated as the
ContextManager does (characters / chars_per_token, plus its per-message overhead), with the
tools' JSON counted the same way. The floor of every figure is the system prompt alone (what
no exposure can save).

Goals: "hi" <= 600 tokens; a one-tool turn whose capability is named in plain words: 2 LLM
requests and <= 3,000 prompt tokens in all (for "text Ana": the card's turn and the approved
one together).
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.channel import ChannelSender
from bot.config import load_settings
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from bot.credentials import new_key
from bot.loop.context import ContextManager
from channels.sms.traits import TRAITS as SMS_TRAITS
from tests.fakes.fake_open_meteo import FakeOpenMeteo
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall

GOAL_HI = 600
GOAL_ONE_TOOL = 3000
GOAL_REQUESTS = 2
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


@dataclass(frozen=True)
class Turn:
    text: str
    capability: str | None  # None: no tool needed
    call: ToolCall | None
    answer: str
    approve: str | None = None  # the person's answer to the approval the call asks for


TURNS: dict[str, Turn] = {
    "hi": Turn("hi", None, None, "Hello! What can I do for you?"),
    "six times seven": Turn("what is six times seven", "time",
                            ToolCall("calculate", {"expression": "6*7"}), "6 × 7 = 42."),
    "remind me": Turn("remind me tomorrow at 3pm to call mom", "tasks",
                      ToolCall("draft_reminder", {"what": "call mom", "when": "tomorrow 15:00"}),
                      "Done: I'll remind you tomorrow at 15:00 to call mom."),
    "weather": Turn("what's the weather in Lyon", "weather",
                    ToolCall("weather", {"place": "Lyon"}), "Overcast, 4°C; rain from 11:00."),
    "text Ana": Turn("text Ana that I'm late", "contacts",
                     ToolCall("message_someone", {"to": "Ana", "text": "I'm late"}),
                     "Sent: Ana will get “I'm late”.", approve="yes"),
    "tomorrow": Turn("what's on tomorrow?", "calendar",
                     ToolCall("list_events", {"day": "tomorrow"}), "Standup at 10:30."),
}
WAYS = {"router": ("capabilities", True), "router off": ("capabilities", False),
        "every tool": ("all", False)}
# The same turns on main before the router (commit e82a0ac, this bench): requests, tokens.
TODAY = {"hi": (1, 360), "six times seven": (3, 4218), "remind me": (3, 6801),
         "weather": (3, 3817), "text Ana": (3, 5715), "tomorrow": (3, 4518)}


def model(turn: Turn):  # type: ignore[no-untyped-def]
    """A model that needs `turn.call`: it calls it once it is offered, else opens its
    capability; answers once the call's result is in."""
    def respond(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        offered = {t["function"]["name"] for t in body.get("tools") or ()}
        if turn.call is None or _answered(messages, turn.call.name):
            return Reply(content=turn.answer)
        if turn.call.name in offered:
            return Reply(tool_calls=[turn.call])
        return Reply(tool_calls=[ToolCall("open_capability", {"name": turn.capability})])
    return respond


def _answered(messages: list[dict[str, Any]], tool: str) -> bool:
    """The last message is the result of a call to `tool`."""
    if messages[-1]["role"] != "tool":
        return False
    call_id = messages[-1].get("tool_call_id")
    return any(c["id"] == call_id and c["function"]["name"] == tool
               for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ())


def request_tokens(request: dict[str, Any], context: ContextManager) -> tuple[int, int]:
    """(messages, tools) tokens of one request."""
    messages = context.estimate_tokens(request["messages"])
    tools = int(len(json.dumps(request.get("tools") or [])) / context.cfg.chars_per_token)
    return messages, tools


class SmsSender(ChannelSender):
    """An SMS channel that accepts every message: "text Ana" needs one to exist."""

    traits = SMS_TRAITS

    async def send(self, message: Any) -> str:
        return "SM1"


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


async def measure(way: str, folder: Path, llm: FakeOpenAI, meteo: FakeOpenMeteo, feed: str
                  ) -> dict[str, list[tuple[int, int]]]:
    from bot.app import App

    exposure, router = WAYS[way]
    name = way.replace(" ", "-")
    config = folder / f"{name}.yaml"
    config.write_text(f"tool_exposure: {exposure}\ncapability_router: {str(router).lower()}\n"
                      f"tools:\n  weather:\n    api_url: {meteo.base_url}\n")
    env = {"VALET_DATABASE_URL": f"sqlite:///{folder}/{name}.db",
           "VALET_LLM_BASE_URL": llm.base_url, "VALET_LLM_MODEL": "m",
           "VALET_LLM_API_KEY": "k"}
    settings = load_settings(str(config), env=env)
    # A calendar is connected before the app that is measured starts (capabilities are
    # checked at start-up). Each turn is measured in a fresh conversation: one person a turn.
    first = await App.build(settings, clock=FakeClock(NOW))
    for turn in TURNS:
        person = f"bench-{turn}"
        await first.users.ensure(person, display_name="Sam", timezone="Europe/Paris", at=NOW)
        await first.services.credentials.put(person, "calendar", {"kind": "ics", "url": feed},
                                             NOW)
        await first.services.stores.contacts.save(person, "Ana", {"phone": "+12125550101"},
                                                  NOW)
    await first.close()
    app = await App.build(settings, clock=FakeClock(NOW))
    app.add_channel(SmsSender())
    context = ContextManager(settings.loop_config())
    found: dict[str, list[tuple[int, int]]] = {}
    try:
        for name, turn in TURNS.items():
            llm.reset()
            llm.responder = model(turn)
            requests = []
            for text in (turn.text, turn.approve):
                if text is None:
                    continue
                start = len(llm.requests)
                await app.orchestrator.handle_message(Inbound(
                    user_id=f"bench-{name}", channel="telegram", text=text, received_at=NOW))
                requests += llm.requests[start:]
                # Memory extraction after the turn makes requests of its own: not the turn's.
                await app.memory.extractor.drain()
            found[name] = [request_tokens(r, context) for r in requests]
            if name == "hi":  # the floor: the system prompt alone
                found["floor"] = [(context.estimate_tokens(requests[0]["messages"][:1]), 0)]
    finally:
        await app.close()
    return found


def _verdict(name: str, requests: list[tuple[int, int]]) -> str:
    total = sum(m + t for m, t in requests)
    if TURNS[name].call is None:
        return f"goal <= {GOAL_HI}: {'met' if total <= GOAL_HI else 'NOT MET'}"
    met = len(requests) <= GOAL_REQUESTS and total <= GOAL_ONE_TOOL
    return (f"goal {GOAL_REQUESTS} requests, <= {GOAL_ONE_TOOL}: "
            f"{'met' if met else 'NOT MET'}")


async def run() -> list[str]:
    os.environ.setdefault("VALET_SECRET_KEY", new_key())
    lines = ["Prompt tokens and LLM requests per turn (estimated: chars / 4 + per-message "
             "overhead; tools as JSON), every built-in capability configured"]
    async with AsyncExitStack() as stack:
        llm = await stack.enter_async_context(FakeOpenAI())
        meteo = await stack.enter_async_context(FakeOpenMeteo())
        feed = await _feed_server(stack)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        measured = {way: await measure(way, folder, llm, meteo, feed) for way in WAYS}
    floor = measured["router"].pop("floor")[0][0]
    for found in measured.values():
        found.pop("floor", None)
    lines.append(f"  floor (the system prompt alone): {floor} tokens")
    for name in TURNS:
        lines.append(f"  {name!r}:")
        for way, found in measured.items():
            requests = found[name]
            total = sum(m + t for m, t in requests)
            steps = " + ".join(f"{m + t}" for m, t in requests)
            goal = f"   {_verdict(name, requests)}" if way == "router" else ""
            lines.append(f"    {way:20s} {len(requests)} request(s), {total:6d} tokens "
                         f"({steps}){goal}")
        before = TODAY.get(name)
        if before is not None:
            lines.append(f"    {'before (e82a0ac)':20s} {before[0]} request(s), {before[1]:6d} "
                         "tokens")
    return lines
