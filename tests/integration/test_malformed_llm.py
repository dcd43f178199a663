"""An LLM that answers 200 with something that is not JSON, after a tool ran: the error is
handled at the call (bounded retries), the turn is not re-run, the tool ran once, and the
user is told what happened."""

from __future__ import annotations

import asyncio

from tests.fakes.fake_openai import Raw, ToolCall
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming


async def test_garbage_after_a_tool_call_saves_the_note_once_and_says_so(app_factory, fake_llm):
    app = await app_factory(loop={"llm_max_retries": 2, "llm_retry_base_delay": 0.01})
    console = RecordingSender("console")
    app.add_channel(console)
    await app.start()
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("take_note", {"title": "Trip",
                                                    "body": "passport, charger"})]),
        *[Raw("<html><h1>502 Bad Gateway</h1></html>")] * 10)
    await app.gateway.receive(incoming("note: passport, charger", channel="console",
                                       address="local"))
    await asyncio.wait_for(app.gateway.wait_idle(), 20)

    notes = await app.db.fetch("SELECT title, body FROM notes")
    assert notes == [{"title": "Trip", "body": "passport, charger"}]  # saved once
    assert console.texts() == [app.persona.lines.llm_malformed]
    assert "couldn't read" in app.persona.lines.llm_malformed
    assert fake_llm.calls == 1 + 3  # the tool call, then the first try and two retries
    [row] = await app.db.fetch("SELECT status, attempts FROM inbox")
    assert row == {"status": "done", "attempts": 1}  # the turn ran once
    assert await app.db.fetchval("SELECT COUNT(*) FROM turn_journal") == 0


async def test_one_garbled_answer_is_retried_and_the_turn_goes_on(app_factory, fake_llm):
    app = await app_factory()
    console = RecordingSender("console")
    app.add_channel(console)
    await app.start()
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("take_note", {"body": "buy milk"})]),
        Raw('{"choices": [{"message": ', content_type="application/json"),
        LLMReply(content="Noted: buy milk."))
    await app.gateway.receive(incoming("note buy milk", channel="console", address="local"))
    await asyncio.wait_for(app.gateway.wait_idle(), 20)
    assert console.texts() == ["Noted: buy milk."]
    assert await app.db.fetchval("SELECT COUNT(*) FROM notes") == 1
    assert fake_llm.calls == 3
