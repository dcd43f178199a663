"""Lean tool exposure: a "hi" carries only the core tools; a capability the message names is
open in its first request (the capability router); any other is one extra LLM step away and
stays open for a few turns; a closed group's tool is refused, never run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.contracts.envelopes import Inbound
from tests.fakes.fake_open_meteo import FakeOpenMeteo
from tests.fakes.fake_openai import Reply, ToolCall

# nothing_to_report is offered in triggered runs only (the last test).
CORE = {"ask_user", "update_plan", "cancel_task", "open_capability", "delegate"}


@pytest.fixture
async def meteo():
    async with FakeOpenMeteo() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_secret_key(monkeypatch):
    monkeypatch.delenv("VALET_SECRET_KEY", raising=False)  # the calendar stays off


async def lean_app(app_factory, meteo, **overrides):
    app = await app_factory(tool_exposure="capabilities",
                            tools={"weather": {"api_url": meteo.base_url}}, **overrides)
    owner = await app.ensure_owner()
    return app, owner.id


def say(app, user: str, text: str):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text,
        received_at=datetime(2026, 1, 5, 9, tzinfo=UTC)))


def tools_of(request) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def tool_results(request) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_a_hello_carries_only_the_core_tools_and_lists_the_capabilities_on(
        app_factory, fake_llm, meteo):
    # loop.mode react: every request carries tools (the default, auto, answers a greeting
    # without any: see the next test).
    app, me = await lean_app(app_factory, meteo, loop={"mode": "react"})
    fake_llm.script(Reply(content="Hello! How can I help?"))
    reply = await say(app, me, "hi")
    assert reply.text == "Hello! How can I help?"
    [request] = fake_llm.requests
    assert tools_of(request) == CORE
    system = request["messages"][0]["content"]
    assert "weather (" in system and "notes (" in system and "open_capability" in system
    assert "calendar" not in system  # off: no VALET_SECRET_KEY, nothing connected
    opener = next(t for t in request["tools"] if t["function"]["name"] == "open_capability")
    assert "calendar" not in opener["function"]["parameters"]["properties"]["name"]["enum"]


async def test_in_auto_mode_a_hello_carries_no_tools_but_still_lists_the_capabilities(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(content="Hello! How can I help?"),
                    Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
                    Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(content="Overcast in Lyon."))
    assert (await say(app, me, "hi Valet!")).text == "Hello! How can I help?"
    [request] = fake_llm.requests
    assert "tools" not in request
    system = request["messages"][0]["content"]
    assert "weather (" in system and "open_capability" in system
    trace = await app.orchestrator.deps.traces.last(me)
    assert trace.mode == "simple"
    # The next message needs a tool and names none: it gets the core, and the capability
    # one step away.
    assert (await say(app, me, "and in Lyon, coat or not?")).text == "Overcast in Lyon."
    assert tools_of(fake_llm.requests[1]) == CORE
    assert (await app.orchestrator.deps.traces.last(me)).mode == "react"


async def test_a_question_that_names_no_capability_reaches_its_tool_in_one_extra_step(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
                    Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(content="Overcast and 4°C in Lyon; rain from 11:00."))
    reply = await say(app, me, "should I take a coat in Lyon today?")
    assert reply.text == "Overcast and 4°C in Lyon; rain from 11:00."
    first, second, third = fake_llm.requests
    assert "weather" not in tools_of(first)
    assert {"weather", "set_my_place"} <= tools_of(second)
    assert "list_notes" not in tools_of(second)  # only the group that was opened
    assert "Weather for Lyon, FR" in tool_results(third)[-1]
    assert [path for path, _ in meteo.requests] == ["/v1/search", "/v1/forecast"]


async def test_a_tool_of_a_closed_group_is_refused_and_its_group_opens(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(content="4°C in Lyon."))
    await say(app, me, "coat or no coat in Lyon?")
    _, second, third = fake_llm.requests
    assert "was not open. It is open now" in tool_results(second)[-1]
    assert "weather" in tools_of(second)
    assert "Weather for Lyon" in tool_results(third)[-1]
    assert [path for path, _ in meteo.requests] == ["/v1/search", "/v1/forecast"]  # once


async def test_an_open_capability_stays_offered_for_the_rest_of_the_conversation(
        app_factory, fake_llm, meteo):
    # Once past `open_for_turns` a capability is no longer open, but the conversation keeps
    # being offered its tools, in the same order: the server's prompt cache (which holds the
    # tools ahead of the history) stays valid (bot.tools.offer).
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
                    Reply(content="Which town?"))
    await say(app, me, "will it rain?")
    # (Not "thanks": in auto mode a thanks is answered without any tools; the group still
    # counts that turn.)
    offered = [t["function"]["name"] for t in fake_llm.requests[-1]["tools"]]
    for text in ("Lyon", "and tomorrow?", "and on Sunday?", "something else entirely"):
        fake_llm.reset()
        fake_llm.script(Reply(content="ok"))
        await say(app, me, text)
        assert [t["function"]["name"] for t in fake_llm.requests[0]["tools"]] == offered, text
    assert "weather" in offered and set(offered) > CORE
    # Another conversation starts with the core alone.
    bob = await app.users.ensure("bob", display_name="Bob", at=app.clock.now())
    fake_llm.reset()
    fake_llm.script(Reply(content="ok"))
    await say(app, bob.id, "something else entirely")
    assert tools_of(fake_llm.requests[0]) == CORE


async def test_a_tool_of_a_capability_that_is_off_is_refused(app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("list_events", {"day": "today"})]),
                    Reply(content="I can't see your calendar."))
    reply = await say(app, me, "what's on today?")
    assert reply.text == "I can't see your calendar."
    assert "the calendar capability is not set up" in tool_results(fake_llm.requests[1])[-1]
    assert "list_events" not in tools_of(fake_llm.requests[1])
