"""What a real llama.cpp server did to Valet (recorded in tests/recordings/real_llamacpp/,
copied from ../shared/data/real_llamacpp/), replayed by the fake llama.cpp server (its one slot that
queues, a model that does not stop, its 500s), with what Valet must do instead:

- ramble_until_timeout / ramble_timeout_gives_up: a model that does not stop held the turn
  for the whole timeout, twice; now every request carries its cap, the answer ends there
  and says it was cut, in one request.
- memory_extraction_blocks_turn: the background extraction rambled on the only slot and the
  person's next message waited behind it until it failed; now it gives way.
- unreadable_call_breaks_llamacpp: llama.cpp refused a history with non-JSON call arguments
  (HTTP 500) and Valet sent the same request three more times; now it is repaired once.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pydantic
import pytest

from bot.config.llm_sections import LLMSettings
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import MemorySettings
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from bot.llm.openai_client import OpenAILLM
from bot.llm.recovery import call_with_recovery
from bot.memory.extract import PROMPT as EXTRACTION_PROMPT
from bot.turn.media import NOTE_HEAD
from tests.fakes.fake_llamacpp import FakeLlamaCpp, Said, render, tokens
from tests.fakes.recordings import recording
from tests.helpers import RecordingSender, incoming, loop_config, said, until

RAMBLE = "I am here to help you with all of your digital tools and projects, and "


def exchanges(name: str) -> list[dict[str, Any]]:
    return recording(name)["exchanges"]


def as_said(exchange: dict[str, Any]) -> Said:
    """What the recorded model wrote: its answer, or (no response: it was still writing when
    Valet's timeout closed the connection) a text that never stops."""
    response = exchange.get("response")
    if not response or "choices" not in response:
        return Said(RAMBLE, stops=False)
    return Said(response["choices"][0]["message"]["content"] or "")


def llamacpp_settings(server: FakeLlamaCpp, **fields: Any) -> LLMSettings:
    return LLMSettings(base_url=server.base_url, model="smollm2",
                       api_key=pydantic.SecretStr("not-needed"), **fields)


@pytest.fixture
async def llamacpp_app(app_factory):
    """An app whose LLM is a fake llama.cpp server, with a recording `test` channel."""

    async def make(server: FakeLlamaCpp, *, llm: dict[str, Any] | None = None, **overrides):
        access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                                allow=["alice"])})
        app = await app_factory(llm=llamacpp_settings(server, **(llm or {})), access=access,
                                **overrides)
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.start()
        return app, sender

    return make


async def say(app, text: str) -> None:  # type: ignore[no-untyped-def]
    await app.gateway.receive(incoming(text, channel="test", address="alice"))
    await asyncio.wait_for(app.gateway.wait_idle(), 30)


async def test_a_model_that_does_not_stop_is_cut_at_the_cap_and_the_answer_says_so(
        llamacpp_app):
    [rambled, _] = exchanges("ramble_until_timeout")  # 60 s, then the same again
    assert rambled["response"] is None and "max_tokens" not in rambled["request"]
    async with FakeLlamaCpp(jinja_tools=False) as server:
        server.script(as_said(rambled))
        app, sender = await llamacpp_app(server, llm={"max_output_tokens": 64})
        await say(app, said(rambled["request"]["messages"][-1]["content"]))  # "hi"
        [text] = sender.texts("alice")
        assert text.startswith(RAMBLE.strip()) and text.endswith(app.persona.lines.cut_short)
        [request] = server.requests
        assert request["max_tokens"] == 64
        [answer] = server.answers
        assert answer["finish_reason"] == "length" and answer["predicted_n"] == 64


async def test_both_attempts_rambling_is_one_capped_answer_not_a_failed_turn(llamacpp_app):
    first, second = exchanges("ramble_timeout_gives_up")
    assert first["response"] is None and second["response"] is None
    async with FakeLlamaCpp(jinja_tools=True) as server:
        server.script(as_said(first), as_said(second))
        app, sender = await llamacpp_app(server)
        await say(app, said(first["request"]["messages"][-1]["content"]))  # save a note
        [text] = sender.texts("alice")
        assert text != app.persona.lines.llm_unavailable
        assert text.endswith(app.persona.lines.cut_short)
        assert len(server.requests) == 1  # no second attempt
        assert server.requests[0]["max_tokens"] == app.settings.llm.max_output_tokens


def _is_extraction(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == EXTRACTION_PROMPT


async def test_the_persons_next_message_does_not_wait_behind_a_rambling_extraction(
        llamacpp_app):
    recorded = exchanges("memory_extraction_blocks_turn")
    turn, extraction, blocked = recorded[0], recorded[1], recorded[2]
    assert _is_extraction(extraction["request"]) and blocked["response"] is None
    # Slow enough that the capped extraction would hold the slot for ~20 s.
    async with FakeLlamaCpp(slots=1, jinja_tools=False, token_seconds=0.05) as server:
        extractions = [as_said(extraction), Said('{"facts": []}'), Said('{"facts": []}')]
        answers = [as_said(turn), Said("You have no notes yet.")]
        server.model = lambda body: (extractions if _is_extraction(body) else answers).pop(0)
        app, sender = await llamacpp_app(server, llm={"background_quiet_seconds": 0},
                                         memory=MemorySettings())
        gate = app.person_first
        assert gate is not None and gate.concurrency == 1  # from /props total_slots

        await say(app, said(turn["request"]["messages"][-1]["content"]))  # delete my note
        # The extraction for that turn is generating on the only slot...
        await until(lambda: any(_is_extraction(r) for r in server.requests),
                    "the extraction to start")
        # ...when the person writes again: it gives way, the person is answered.
        await say(app, said(blocked["request"]["messages"][-1]["content"]))
        assert sender.texts("alice")[-1] == "You have no notes yet."
        assert gate.preempted == 1 and server.cancelled == 1
        kinds = [("extraction" if _is_extraction(r) else "turn", a["status"])
                 for r, a in zip(server.requests, server.answers, strict=True)
                 if a["status"] != 500]  # (the server refuses tools: asked again without)
        assert kinds[:3] == [("turn", 200), ("extraction", "cancelled"), ("turn", 200)]
        # Made again once the person is answered, within its cap.
        await asyncio.wait_for(app.memory.extractor.drain(), 30)
        again = [r for r in server.requests if _is_extraction(r)]
        assert len(again) >= 2 and again[0]["messages"] == again[1]["messages"]
        assert all(r["max_tokens"] == app.settings.llm.background_max_tokens for r in again)


async def test_a_request_llamacpp_refuses_as_invalid_is_repaired_once_not_sent_again():
    recorded = exchanges("unreadable_call_breaks_llamacpp")
    refused = [e for e in recorded if e["status"] == 500]
    assert len(refused) == 4  # the request, and the same three more times
    request = refused[0]["request"]
    async with FakeLlamaCpp(jinja_tools=True) as server:
        server.script(Said("Done: I'll remind you tomorrow at 3pm to call mom."))
        llm = OpenAILLM(base_url=server.base_url, api_key="k", model="smollm2", timeout=10)
        try:
            outcome = await call_with_recovery(
                llm, lambda level: request["messages"], request["tools"], loop_config(),
                _NoClock(), max_recovery_level=0)
        finally:
            await llm.close()
    assert outcome.response.content == "Done: I'll remind you tomorrow at 3pm to call mom."
    assert [a["status"] for a in server.answers] == [500, 200]
    [first, repaired] = server.requests
    assert first["messages"] == request["messages"]  # the recorded request, refused as there
    [call] = repaired["messages"][2]["tool_calls"]
    assert call["function"]["arguments"] == "{}"
    assert repaired["messages"][3] == request["messages"][3]  # its result, as it was


class _NoClock:
    async def sleep(self, seconds: float) -> None:
        raise AssertionError("a refused request is never retried after a wait")


async def test_two_turns_a_minute_apart_share_the_whole_history_prefix(llamacpp_app):
    # The recorded system prompt ended with the minute ("Current time for the user: ...
    # 02:17"): each new minute changed the prompt ahead of the whole history.
    [rambled, _] = exchanges("ramble_until_timeout")
    assert "Current time for the user" in rambled["request"]["messages"][0]["content"]
    async with FakeLlamaCpp(jinja_tools=True) as server:
        server.model = lambda body: Said("Noted.")
        clock = FakeClock(datetime(2026, 12, 2, 14, 32, tzinfo=UTC))
        app, _ = await llamacpp_app(server, clock=clock)
        owner = await app.ensure_owner()
        for text in ("my sister is called Ana", "what is six times seven"):
            await app.orchestrator.handle_message(Inbound(
                user_id=owner.id, channel="console", text=text, received_at=clock.now()))
            clock.advance(minutes=1)
    first, second = server.requests
    assert "14:32" not in first["messages"][0]["content"]  # the system prompt holds no time
    assert "14:32" in first["messages"][-1]["content"] and \
        "14:33" in second["messages"][-1]["content"]
    assert second["messages"][0] == first["messages"][0] and second["tools"] == first["tools"]
    assert second["messages"][1]["content"] == said(first["messages"][1]["content"])
    # The server reads from its cache everything the first request held up to its note.
    rendered = render(first)
    held = tokens(rendered[:rendered.index(NOTE_HEAD)].rstrip())
    [_, answer] = server.answers
    assert answer["cache_n"] >= len(held)
