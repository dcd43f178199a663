"""Thought traces on demand: /debug (the owner's) and `valet turns`, from what the turn did."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from bot.cli.turns import run_turns
from bot.contracts.envelopes import Inbound
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def inbound(user: str, text: str) -> Inbound:
    return Inbound(user_id=user, channel="console", text=text, received_at=NOW)


async def two_tool_turn(app, fake_llm, user: str) -> None:  # type: ignore[no-untyped-def]
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7"}),
                             ToolCall("current_time", {"timezone": "Asia/Tokyo"})],
                 reasoning="Two lookups at once: the product and the time in Tokyo."),
        LLMReply(content="42, and it is evening in Tokyo."))
    await app.orchestrator.handle_message(inbound(user, "6*7 and Tokyo time?"))


async def test_debug_after_a_two_tool_turn_shows_both_calls(app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    await two_tool_turn(app, fake_llm, owner.id)
    calls = fake_llm.calls
    reply = await app.orchestrator.handle_message(inbound(owner.id, "/debug"))
    assert fake_llm.calls == calls  # no LLM call to explain a turn
    text = reply.text
    assert "6*7 and Tokyo time?" in text and "stopped: final_answer" in text
    assert "LLM fake-model" in text and "asked for calculate, current_time" in text
    assert "thinking: Two lookups at once" in text  # the model's own reasoning text
    assert 'tool calculate({"expression": "6*7"}) -> success' in text and "42" in text
    assert 'tool current_time({"timezone": "Asia/Tokyo"}) -> success' in text
    assert "answered “42, and it is evening in Tokyo.”" in text
    # The trace says how many tokens went where.
    trace = await app.orchestrator.deps.traces.last(owner.id)
    assert [e["kind"] for e in trace.entries] == ["llm", "tool", "tool", "llm"]
    assert trace.input_tokens == sum(e["input_tokens"] for e in trace.entries
                                     if e["kind"] == "llm") > 0


async def test_debug_is_an_unknown_command_for_anyone_but_the_owner(app_factory, fake_llm):
    app = await app_factory()
    await app.users.ensure("alice", timezone="Europe/Paris", at=NOW)
    await two_tool_turn(app, fake_llm, "alice")
    reply = await app.orchestrator.handle_message(inbound("alice", "/debug"))
    plain = await app.orchestrator.handle_message(inbound("alice", "/nosuchthing"))
    assert reply.text == plain.text.replace("/nosuchthing", "/debug")
    assert "42" not in reply.text
    listing = await app.orchestrator.handle_message(inbound("alice", "/help"))
    assert "/debug" not in listing.text
    owner = await app.ensure_owner()
    seen = await app.orchestrator.handle_message(inbound(owner.id, "/debug alice"))
    assert "tool calculate" in seen.text  # the owner may look at another person's turn
    assert "/debug" in (await app.orchestrator.handle_message(inbound(owner.id, "/help"))).text


async def test_valet_turns_lists_and_shows_turns_from_the_database(app_factory, fake_llm,
                                                                   app_settings):
    app = await app_factory()
    owner = await app.ensure_owner()
    await two_tool_turn(app, fake_llm, owner.id)
    said: list[str] = []
    settings = app_settings()
    code = await run_turns(settings, argparse.Namespace(action="list", user=None, limit=20),
                           said.append)
    assert code == 0
    [line] = said
    turn_id = line.split("\t")[0]
    assert "final_answer" in line and "2 LLM, 2 tools" in line
    said.clear()
    assert await run_turns(settings, argparse.Namespace(action="show", turn_id=turn_id),
                           said.append) == 0
    assert "tool calculate" in said[0] and "tool current_time" in said[0]
    said.clear()
    assert await run_turns(settings, argparse.Namespace(action="show", turn_id="nope"),
                           said.append) == 1
    assert said == ["no turn nope (see `valet turns list`)"]


async def test_a_turn_cut_short_is_shown_from_its_journal(app_factory, fake_llm, app_settings):
    from bot.llm.port import LLMResponse
    from bot.llm.port import ToolCall as Call
    from bot.loop.journal import TurnJournal

    app = await app_factory()
    journal = TurnJournal(app.db, app.clock)
    await journal.llm_response("inbox-9", 1, LLMResponse(None, [Call("c1", "calculate",
                                                                     '{"expression": "1+1"}')]))
    await journal.tool_started("inbox-9", 1, Call("c1", "calculate", '{"expression": "1+1"}'))
    said: list[str] = []
    settings = app_settings()
    await run_turns(settings, argparse.Namespace(action="list", user=None, limit=20),
                    said.append)
    assert any(line.startswith("inbox-9\t") and "cut short" in line for line in said)
    said.clear()
    await run_turns(settings, argparse.Namespace(action="show", turn_id="inbox-9"), said.append)
    assert "LLM step 1: asked for calculate" in said[0]
    assert "no result recorded" in said[0]


async def test_reasoning_text_is_read_from_answers_and_streams(llm, fake_llm):
    fake_llm.script(LLMReply(content="4", reasoning="2+2 is 4."),
                    LLMReply(content="5", reasoning="2+3 is 5."))
    plain = await llm.complete([{"role": "user", "content": "2+2?"}], None)
    chunks: list[str] = []

    async def on_text(text: str) -> None:
        chunks.append(text)

    streamed = await llm.complete([{"role": "user", "content": "2+3?"}], None, on_text=on_text)
    assert (plain.content, plain.reasoning) == ("4", "2+2 is 4.")
    assert (streamed.content, streamed.reasoning) == ("5", "2+3 is 5.")
    assert "".join(chunks) == "5"  # the thinking is never shown as the answer


async def test_debug_of_a_failed_turn_shows_its_real_time_and_tokens(app_factory, app_settings,
                                                                     fake_llm):
    """ramble_timeout_gives_up.json: both attempts ran to the timeout, and /debug said
    "0.0 s, 0 tokens in / 0 out"."""
    from tests.fakes.fake_openai import Hang

    llm = app_settings().llm.model_copy(update={"timeout_seconds": 0.4})
    app = await app_factory(llm=llm)
    owner = await app.ensure_owner()
    fake_llm.script(LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7"})],
                             usage=(120, 9)), Hang(5), Hang(5))
    failed = await app.orchestrator.handle_message(inbound(owner.id, "what is 6*7?"))
    assert failed.stop.value == "llm_error"
    trace = await app.orchestrator.deps.traces.last(owner.id)
    assert trace.duration_ms >= 800  # two attempts of 0.4 s at least, not 0
    assert (trace.input_tokens, trace.output_tokens) == (120, 9)
    assert [e["kind"] for e in trace.entries] == ["llm", "tool", "llm_failed"]
    text = (await app.orchestrator.handle_message(inbound(owner.id, "/debug"))).text
    assert f"{trace.duration_ms / 1000:.1f} s, 120 tokens in / 9 out" in text
    assert "no answer after" in text and "(retries included)" in text
