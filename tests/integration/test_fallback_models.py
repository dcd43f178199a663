"""Fallback models: a failing endpoint no longer ends the turn; where the next model could not
read the first one's tool messages, they are flattened in its request view (never in the
stored history); the switch is in the turn's trace and metrics."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.config.llm_sections import FallbackModelSettings
from bot.contracts.envelopes import Inbound
from bot.loop.fallback import provider_of
from tests.fakes.fake_openai import Fail, FakeOpenAI, Reply, ToolCall
from tests.fakes.fake_openai import Reply as LLMReply

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


@pytest.fixture
async def backup():
    async with FakeOpenAI() as fake:
        yield fake


async def app_with_fallback(app_factory, app_settings, backup, **fallback):  # type: ignore[no-untyped-def]
    llm = app_settings().llm.model_copy(update={"fallback_models": [FallbackModelSettings(
        model="backup-model", base_url=backup.base_url, **fallback)]})
    app = await app_factory(llm=llm)
    return app, (await app.ensure_owner()).id


def say(app, user: str, text: str):  # type: ignore[no-untyped-def]
    return app.orchestrator.handle_message(Inbound(user_id=user, channel="console", text=text,
                                                   received_at=NOW))


async def test_a_503_primary_hands_the_turn_to_the_fallback_which_reads_its_tools_as_text(
        app_factory, app_settings, fake_llm, backup):
    app, me = await app_with_fallback(app_factory, app_settings, backup)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7"},
                                                  id="toolu_01A")]),
                    *[Fail(503)] * 4)  # the first try and every retry of the next call
    backup.script(LLMReply(content="It's 42."))
    reply = await say(app, me, "what is 6*7?")
    assert reply.text == "It's 42." and reply.stop.value == "final_answer"
    assert fake_llm.calls == 5 and backup.calls == 1
    [request] = backup.requests
    assert request["model"] == "backup-model"
    sent = request["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant"]
    flat = sent[-1]["content"]
    assert "calculate" in flat and "6*7" in flat and "42" in flat  # what was asked and got
    assert "toolu_01A" not in str(sent)  # another provider's call id never reaches it
    assert all("written_by" not in m for m in sent)  # nor the bookkeeping
    # The stored history keeps the first model's round as it was.
    stored = await app.history.load(me)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1]["tool_calls"][0]["id"] == "toolu_01A"
    assert stored[1]["written_by"] == app.orchestrator.deps.provider
    # The switch is in the turn's trace (/debug) and its metrics.
    debug = (await say(app, me, "/debug")).text
    assert "switched model fake-model -> backup-model: LLMServerError" in debug
    assert "LLM backup-model" in debug
    assert app.metrics.registry.get_sample_value(
        "valet_llm_model_switches_total",
        {"from_model": "fake-model", "to_model": "backup-model"}) == 1


async def test_the_next_turn_tries_the_first_model_again_and_reads_the_fallbacks_tools_flat(
        app_factory, app_settings, fake_llm, backup):
    app, me = await app_with_fallback(app_factory, app_settings, backup)
    fake_llm.script(Fail(404, message="The model `fake-model` does not exist."))
    backup.script(LLMReply(tool_calls=[ToolCall("calculate", {"expression": "2+2"})]),
                  LLMReply(content="4."))
    assert (await say(app, me, "2+2?")).text == "4."
    assert fake_llm.calls == 1  # an unknown model is not retried: the fallback at once
    assert [m["role"] for m in backup.requests[1]["messages"]][-2:] == ["assistant", "tool"]
    fake_llm.script(LLMReply(content="Still 4."))
    assert (await say(app, me, "and again?")).text == "Still 4."
    sent = fake_llm.requests[-1]["messages"]
    assert "tool" not in [m["role"] for m in sent]  # the backup's round, flattened for it
    assert any("calculate" in (m["content"] or "") and "2+2" in (m["content"] or "")
               for m in sent if m["role"] == "assistant")


async def test_models_of_one_provider_read_each_others_tool_messages(
        app_factory, app_settings, fake_llm, backup):
    app, me = await app_with_fallback(app_factory, app_settings, backup,
                                      provider=provider_of(fake_llm.base_url))
    fake_llm.script(LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7"})]),
                    *[Fail(502)] * 4)
    backup.script(LLMReply(content="42."))
    assert (await say(app, me, "6*7?")).text == "42."
    assert [m["role"] for m in backup.requests[0]["messages"]] == [
        "system", "user", "assistant", "tool"]  # as written: nothing to flatten


async def test_a_refused_key_is_not_a_reason_to_switch(app_factory, app_settings, fake_llm,
                                                       backup):
    app, me = await app_with_fallback(app_factory, app_settings, backup)
    fake_llm.script(Fail(401))
    reply = await say(app, me, "6*7?")
    assert reply.stop.value == "llm_error" and reply.text == app.persona.lines.misconfigured
    assert backup.calls == 0


async def test_doctor_asks_each_fallback_model_once(app_settings, fake_llm, backup):
    from bot.cli.doctor import run_doctor

    settings = app_settings()
    llm = settings.llm.model_copy(update={"fallback_models": [
        FallbackModelSettings(model="backup-model", base_url=backup.base_url),
        FallbackModelSettings(model="gone-model", base_url=backup.base_url)]})
    fake_llm.responder = lambda body: Reply(content="ready")  # every request doctor makes
    backup.script(Reply(content="ready"), Fail(404))
    lines: list[str] = []
    await run_doctor(settings.model_copy(update={"llm": llm}), lines.append)
    assert any(line.endswith(f"fallback LLM backup-model at {backup.base_url} answered "
                             f"(provider {provider_of(backup.base_url)})") for line in lines)
    # Said in words (the server's), never as an error's class name (issue 45, item 8).
    [gone] = [line for line in lines if "fallback LLM gone-model" in line]
    assert "did not answer: Error code: 404" in gone and "Not found" in gone, gone
    assert "LLMModelNotFoundError" not in gone
