"""Turns against a server in each dialect (the fake OpenAI server writing tool calls and
thinking as a real server without a tool or reasoning parser does; strict about the messages
it is sent, as OpenAI is): the calculator runs, the person reads the answer and nothing else,
the history replayed next is valid for any server, empty answers are asked again, a server
that refuses tools is talked to without them, and no thinking reaches a summary or a memory."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.config.sections import MemorySettings
from bot.contracts.envelopes import Inbound
from persona.lines import DEFAULT
from tests.fakes.dialects import CALL_DIALECTS
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.helpers import said as person_said
from tests.integration.test_compaction import Endpoint, seed
from tests.openai_schema import assert_valid

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)
# What a person must never read (issue 36's list, and the thinking scripted below).
NEVER_SHOWN = ("<tool_call>", "[TOOL_CALLS]", '"arguments"', "<think>", "</think>",
               "<|python_tag|>", "<function=", "I should use calculate", "PRIVATE")
DIALECTS = [(d, "field") for d in CALL_DIALECTS] + [
    ("hermes", "tags"), ("openai", "tags"), ("openai", "unopened"), ("python_tag", "unopened"),
    ("mistral_v11", "tags")]


def six_times_seven(fake: FakeOpenAI) -> None:
    fake.script(Reply(tool_calls=[ToolCall("calculate", {"expression": "6*7"})],
                      reasoning="The person wants 6*7: I should use calculate."),
                Reply(content="Six times seven is 42.",
                      reasoning="PRIVATE: the tool said 42, so I say so."))


def said(app: Any, user: str, text: str) -> Any:
    return app.orchestrator.handle_message(Inbound(user_id=user, channel="console", text=text,
                                                   received_at=NOW))


def assert_shows_nothing_private(text: str) -> None:
    assert text.strip()
    for marker in NEVER_SHOWN:
        assert marker not in text, f"{marker!r} reached the person: {text!r}"


@pytest.mark.parametrize(("dialect", "thinking"), DIALECTS,
                         ids=[f"{d}-{t}" for d, t in DIALECTS])
async def test_six_times_seven_runs_the_calculator_in_every_dialect(
        app_factory, fake_llm: FakeOpenAI, dialect: str, thinking: str):
    fake_llm.dialect, fake_llm.thinking, fake_llm.strict = dialect, thinking, True
    app = await app_factory()
    me = (await app.ensure_owner()).id
    six_times_seven(fake_llm)
    reply = await said(app, me, "what is six times seven")
    assert fake_llm.refused == []
    assert "42" in reply.text
    assert_shows_nothing_private(reply.text)
    # The calculator ran: the second request carries its result after the call.
    after_call = fake_llm.requests[1]["messages"]
    assert_valid(after_call)
    call, result = after_call[-2], after_call[-1]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"] == {
        "name": "calculate", "arguments": '{"expression": "6*7"}'}
    assert result == {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
                      "content": "6 * 7 = 42"}
    # The next turn replays the history: structured, valid, no text form, no thinking.
    fake_llm.script(Reply(content="You're welcome."))
    assert (await said(app, me, "thanks, and what is 2+2?")).text == "You're welcome."
    replayed = fake_llm.requests[2]["messages"]
    assert_valid(replayed)
    spoken = [m for m in replayed if m["role"] == "assistant"]
    assert [bool(m.get("tool_calls")) for m in spoken] == [True, False]  # the call, stored so
    assert spoken[0].get("content") is None  # ...never as the text it came in
    assert_shows_nothing_private(spoken[1]["content"])
    assert fake_llm.refused == []


async def test_a_trace_keeps_the_thinking_the_reply_left_out(app_factory, fake_llm):
    fake_llm.dialect, fake_llm.thinking = "hermes", "tags"
    app = await app_factory()
    me = (await app.ensure_owner()).id
    six_times_seven(fake_llm)
    await said(app, me, "what is six times seven")
    debug = (await said(app, me, "/debug")).text
    assert "thinking: The person wants 6*7: I should use calculate." in debug
    assert "thinking: PRIVATE: the tool said 42, so I say so." in debug
    assert "read: thinking written in <think> blocks" in debug
    assert "tool calls written as text in <tool_call> blocks" in debug


async def test_an_empty_answer_is_asked_again_and_the_second_is_delivered(app_factory,
                                                                          fake_llm):
    app = await app_factory()
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(content="", usage=(50, 1)),
                    Reply(content="Six times seven is 42.", usage=(50, 7)))
    reply = await said(app, me, "what is six times seven")
    assert reply.text == "Six times seven is 42."
    first, second = fake_llm.requests
    assert first == second  # the same request, asked again
    [row] = await app.db.fetch("SELECT prompt_tokens, completion_tokens, llm_requests "
                               "FROM turn_usage")
    assert (row["prompt_tokens"], row["completion_tokens"], row["llm_requests"]) == (100, 8, 2)
    assert app.metrics.total("valet_llm_requests") == 2
    trace = await app.orchestrator.deps.traces.last(me)
    assert trace.entries[0]["read"] == ["an empty answer, asked again"]


async def test_two_empty_answers_get_the_personas_line_never_an_empty_message(app_factory,
                                                                              fake_llm):
    app = await app_factory()
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(content=""), Reply(content=" \n\n "))
    reply = await said(app, me, "what is six times seven")
    assert reply.text == DEFAULT.no_answer
    assert fake_llm.calls == 2
    stored = await app.history.load(me)
    assert stored[-1] == {"role": "assistant", "content": DEFAULT.no_answer}


async def test_only_thinking_is_an_empty_answer(app_factory, fake_llm):
    fake_llm.thinking = "tags"
    app = await app_factory()
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(content="", reasoning="PRIVATE thoughts and nothing else"),
                    Reply(content="Six times seven is 42."))
    assert (await said(app, me, "what is six times seven")).text == "Six times seven is 42."


@pytest.mark.parametrize("server", ["ollama", "vllm", "llama.cpp"])
async def test_a_server_that_refuses_tools_is_talked_to_without_them(app_factory, fake_llm,
                                                                     server):
    fake_llm.refuse_tools = server
    app = await app_factory()
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(content="Six times seven is 42."), Reply(content="Four."))
    assert (await said(app, me, "what is six times seven")).text == "Six times seven is 42."
    assert (await said(app, me, "and 2+2?")).text == "Four."
    assert [bool(r.get("tools")) for r in fake_llm.requests] == [True, False, False]


async def test_thinking_never_reaches_a_summary_or_a_memory(app_factory, fake_llm):
    """The summariser and the memory extractor read answers through the same port: an
    R1-style server's thinking is not in what they store (nor does it break the JSON)."""
    app = await app_factory(loop={"context_token_limit": 3000, "llm_retry_base_delay": 0.01},
                            memory=MemorySettings())
    me = (await app.ensure_owner()).id
    endpoint = Endpoint(fake_llm)
    fake_llm.thinking = "tags"

    def thinking_aloud(body: dict[str, Any]) -> Reply:
        return dataclasses.replace(endpoint.respond(body),
                                   reasoning="PRIVATE: let me think this over.")

    fake_llm.responder = thinking_aloud
    await seed(app, me, 200)
    reply = await said(app, me, "what is the plan for today?")
    await app.compactor.drain()
    await app.memory.extractor.drain()
    assert reply.text == "Noted."
    summary = await app.orchestrator.deps.summaries.latest(me)
    assert summary is not None and "4812" in summary.text
    assert "PRIVATE" not in summary.text and "think>" not in summary.text
    facts = [f.text for f in await app.memory.service.store.open_facts(me)]
    assert facts == ["Locker code is 4812"]
    assert "PRIVATE" not in json.dumps(await app.history.load(me, 1000))


async def test_markup_in_an_answer_to_a_request_without_tools_is_never_shown(app_factory,
                                                                            fake_llm):
    """loop.mode simple offers no tools; a model that writes a call anyway (in text) has it
    closed unrun, as a structured one would be: the person reads the words, not the call."""
    fake_llm.dialect, fake_llm.strict = "hermes", True
    app = await app_factory(loop={"mode": "simple"})
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(content="Let me work that out.",
                          tool_calls=[ToolCall("calculate", {"expression": "6*7"})]),
                    Reply(content="You're welcome."))
    reply = await said(app, me, "what is six times seven")
    assert reply.text == "Let me work that out."
    assert "tools" not in fake_llm.requests[0]
    await said(app, me, "thanks")
    replayed = fake_llm.requests[1]["messages"]
    assert_valid(replayed)
    call, result = replayed[-4], replayed[-3]
    assert call["tool_calls"][0]["function"]["name"] == "calculate"
    assert result["role"] == "tool" and result["content"].startswith("Not run")
    assert fake_llm.refused == []


async def test_a_greeting_answered_with_a_written_call_gets_its_tools(app_factory, fake_llm):
    """In auto mode a greeting is asked without tools; a call written in the answer anyway
    gives the turn its tools and runs (bot.turn.modes), as a structured call does."""
    fake_llm.dialect = "python_tag"
    app = await app_factory()
    me = (await app.ensure_owner()).id
    fake_llm.script(Reply(tool_calls=[ToolCall("calculate", {"expression": "6*7"})]),
                    Reply(content="Hello! Six times seven is 42, by the way."))
    reply = await said(app, me, "hi")
    assert "tools" not in fake_llm.requests[0]
    assert reply.text == "Hello! Six times seven is 42, by the way."
    assert person_said(fake_llm.requests[1]["messages"][-1]["content"]) == "6 * 7 = 42"
