"""The capability router: a message that names a capability in plain words has its tools in
the first request (no `open_capability` round trip); a part's words open only that part; a
follow-up is routed from the last turn; too many names open nothing; what the model had to
open itself is a miss, counted in /metrics and shown in /debug with what the router chose; a
deployment's registry adds words; `capability_router: false` turns it off."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config.sections import AgentsSettings
from bot.contracts.envelopes import Inbound
from tests.fakes.fake_open_meteo import FakeOpenMeteo
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.test_capabilities import lean_app

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


@pytest.fixture
async def meteo():
    async with FakeOpenMeteo() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_secret_key(monkeypatch):
    monkeypatch.delenv("VALET_SECRET_KEY", raising=False)  # the calendar stays off


def say(app, user: str, text: str, **extra):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text, received_at=NOW, **extra))


def tools_of(request) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def tool_results(request) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_a_weather_question_reaches_the_weather_tool_in_its_first_request(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(content="Overcast and 4°C in Lyon."))
    reply = await say(app, me, "what's the weather in Lyon?")
    assert reply.text == "Overcast and 4°C in Lyon."
    first, second = fake_llm.requests
    assert {"weather", "set_my_place", "open_capability"} <= tools_of(first)
    assert "list_notes" not in tools_of(first)  # only what the message names
    assert "Weather for Lyon, FR" in tool_results(second)[-1]
    assert [path for path, _ in meteo.requests] == ["/v1/search", "/v1/forecast"]
    metrics = app.metrics
    assert metrics.total("valet_router_opened", capability="weather") == 1
    assert metrics.total("valet_router_misses") == 0
    trace = await app.orchestrator.deps.traces.last(me)
    assert trace.entries[0] == {"kind": "route", "opened": {"weather": ["weather"]},
                                "read": "message", "unsure": [], "tools": []}
    debug = await say(app, me, "/debug")
    assert "router opened weather (“weather”), from the message" in debug.text


async def test_remind_me_opens_the_reminder_part_only_and_it_stays_alone(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("draft_reminder", {
                        "what": "call mom", "when": "tomorrow 15:00"})]),
                    Reply(content="I'll remind you tomorrow at 15:00."))
    reply = await say(app, me, "remind me tomorrow at 3pm to call mom")
    assert reply.text == "I'll remind you tomorrow at 15:00."
    first, second = fake_llm.requests
    for request in (first, second):  # the call keeps its part open, not all of tasks
        assert {"draft_reminder", "list_reminders"} <= tools_of(request)
        assert "create_condition_task" not in tools_of(request)
    [row] = await app.db.fetch("SELECT text FROM reminders")
    assert row["text"] == "call mom"
    # Asking for more of the capability opens it whole: the router's part was not enough.
    fake_llm.reset()
    fake_llm.script(Reply(tool_calls=[ToolCall("open_capability", {"name": "tasks"})]),
                    Reply(content="Which days?"))
    await say(app, me, "and remind me to water the plants now and then")
    assert "create_condition_task" in tools_of(fake_llm.requests[1])
    assert app.metrics.total("valet_router_misses", capability="tasks") == 1


async def test_a_follow_up_is_routed_from_the_last_turn(app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(content="Sure: what should I tell her?"))
    await say(app, me, "I need to text Ana")
    assert "message_someone" in tools_of(fake_llm.requests[0])
    fake_llm.reset()
    fake_llm.script(Reply(content="Who is Ana?"))
    await say(app, me, "that I'm running late")  # names nothing itself
    assert "message_someone" in tools_of(fake_llm.requests[0])
    trace = await app.orchestrator.deps.traces.last(me)
    assert trace.entries[0]["read"] == "last turn"


async def test_a_message_that_names_too_many_capabilities_opens_nothing(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(content="One thing at a time: which first?"))
    await say(app, me, "weather in Lyon, text Ana, remind me at 5 and note the code")
    assert not {"weather", "message_someone", "draft_reminder", "list_notes"} \
        & tools_of(fake_llm.requests[0])
    trace = await app.orchestrator.deps.traces.last(me)
    assert trace.entries[0]["unsure"] == ["weather", "contacts", "tasks", "notes"]
    assert app.metrics.total("valet_router_opened") == 0


async def test_what_the_model_opens_itself_is_a_miss_in_metrics_and_debug(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo)
    fake_llm.script(Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
                    Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(content="Take a coat."))
    await say(app, me, "coat or no coat in Lyon?")
    assert app.metrics.total("valet_router_misses", capability="weather") == 1
    assert "valet_router_misses_total{capability=\"weather\"} 1.0" \
        in app.metrics.render().decode()
    trace = await app.orchestrator.deps.traces.last(me)
    assert trace.entries[-1] == {"kind": "route_miss", "capabilities": ["weather"]}
    debug = await say(app, me, "/debug")
    assert "router missed: weather (the model opened it itself)" in debug.text
    # The next turn's follow-up finds weather open already: no miss counted again.
    fake_llm.reset()
    fake_llm.script(Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
                    Reply(content="Same tomorrow."))
    await say(app, me, "and tomorrow?")
    assert app.metrics.total("valet_router_misses") == 1


async def test_with_the_router_off_the_model_opens_the_capability_itself(
        app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo, capability_router=False)
    fake_llm.script(Reply(tool_calls=[ToolCall("open_capability", {"name": "weather"})]),
                    Reply(tool_calls=[ToolCall("weather", {"place": "Lyon"})]),
                    Reply(content="Overcast."))
    await say(app, me, "what's the weather in Lyon?")
    first, second, _ = fake_llm.requests
    assert "weather" not in tools_of(first) and "weather" in tools_of(second)
    assert app.metrics.total("valet_router_misses") == 0  # no router, nothing to miss


async def test_only_a_triggered_run_is_offered_nothing_to_report(app_factory, fake_llm, meteo):
    app, me = await lean_app(app_factory, meteo, loop={"mode": "react"})
    fake_llm.script(Reply(content="Nothing new."), Reply(content="Hello."))
    await say(app, me, "morning summary run", from_trigger="task-1", external_id="run-1")
    await say(app, me, "hello there")
    triggered, person = fake_llm.requests
    assert "nothing_to_report" in tools_of(triggered)
    assert "nothing_to_report" not in tools_of(person)


async def test_a_deployment_adds_words_to_a_built_in_capability(
        app_factory, fake_llm, meteo, tmp_path):
    path = tmp_path / "words.yaml"
    path.write_text("capabilities:\n  - name: weather\n    keywords: [parapluie, il pleut]\n"
                    "    examples: [faut-il un parapluie à Lyon]\n")
    app, me = await lean_app(app_factory, meteo,
                               agents=AgentsSettings(registries=[str(path)]))
    fake_llm.script(Reply(content="Oui."))
    await say(app, me, "Faut-il un parapluie à Lyon ?")
    assert "weather" in tools_of(fake_llm.requests[0])
