"""A server's refusal for length teaches the endpoint's context window (context_overflow_2048:
llama-cpp-python's default n_ctx of 2048, reported nowhere else, refused every later turn
three times): learnt from the first refusal, remembered per endpoint and model across a
restart, every later request built within it, and the conversation summarised to stay there."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.contracts.envelopes import Inbound
from bot.llm.context_limit import EndpointContexts
from bot.memory.compaction import PROMPT as SUMMARY_PROMPT
from tests.fakes.fake_openai import Fail, Reply
from tests.fakes.recordings import exchange, recording

NOW = datetime(2026, 12, 2, 9, tzinfo=UTC)
WINDOW = 2048
RECORDED = recording("context_overflow_2048")
REFUSAL = exchange(RECORDED, 10)["response"]["error"]


# llama.cpp's own server says it otherwise (seen by tests/realmodel's stories): a 400 whose
# type is exceed_context_size_error, with the window in its words and in n_ctx.
LLAMACPP_REFUSAL = {"message": "request (2067 tokens) exceeds the available context size "
                               "(2048 tokens), try increasing it",
                    "type": "exceed_context_size_error", "code": None}


class SmallWindow:
    """A server with a 2048-token context that refuses what does not fit, as
    llama-cpp-python did (a token counted as five characters of the request's JSON, tools
    included: the recorded refusal's 2,067 tokens were 11,996 characters)."""

    def __init__(self, fake: Any, refusal: dict[str, Any]) -> None:
        self.refusal = refusal
        self.refused = 0
        self.summaries = 0
        self.answered: list[int] = []
        fake.responder = self.respond

    def respond(self, body: dict[str, Any]) -> Any:
        tokens = (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools") or [])
                                                         )) // 5
        if tokens > WINDOW:
            self.refused += 1
            return Fail(400, message=self.refusal["message"], code=self.refusal["code"],
                        type=self.refusal["type"])
        self.answered.append(tokens)
        if body["messages"][0]["content"].startswith(SUMMARY_PROMPT.split("{")[0]):
            self.summaries += 1
            return Reply(content="The person asked about their garden and their notes.")
        return Reply(content="Sure. " + "Here is a long and careful answer. " * 20)


def say(app: Any, user: str, text: str) -> Any:
    return app.orchestrator.handle_message(Inbound(user_id=user, channel="console", text=text,
                                                   received_at=NOW))


@pytest.mark.parametrize("refusal", [REFUSAL, LLAMACPP_REFUSAL],
                         ids=["llama-cpp-python", "llama.cpp"])
async def test_the_window_is_learnt_from_one_refusal_and_kept(app_factory, fake_llm, refusal):
    server = SmallWindow(fake_llm, refusal)
    app = await app_factory(tool_exposure="capabilities")  # the tools a turn is offered
    me = (await app.ensure_owner()).id
    for i in range(3):
        await app.history.append(me, f"old-{i}", [
            {"role": "user", "content": f"tell me about my garden, part {i}. " * 20},
            {"role": "assistant", "content": "Your garden has roses and tulips. " * 40}],
            channel="console", at=NOW)

    reply = await say(app, me, "save a note: buy milk")
    assert reply.text.startswith("Sure.")
    assert server.refused == 1  # one refusal, then a request within the window it named
    assert app.llm.context_tokens == WINDOW
    assert await EndpointContexts(app.db).all() == {(fake_llm.base_url, "fake-model"): WINDOW}

    for text in ("delete my note about milk", "what did I ask you to remind me about?",
                 "and the garden?"):
        await say(app, me, text)
        await app.compactor.drain()
    assert server.refused == 1  # no later turn is refused: each is built within the window
    assert server.summaries >= 1  # the conversation is summarised to stay within it
    assert all(tokens <= WINDOW for tokens in server.answered)
    summary = await app.orchestrator.deps.summaries.latest(me)
    assert summary is not None and "garden" in summary.text

    # A restart remembers it: the first long turn is not refused again.
    again = await app_factory(tool_exposure="capabilities")
    assert again.llm.context_tokens == WINDOW
    await say(again, me, "what about the roses? " * 30)
    assert server.refused == 1


async def test_the_windows_are_kept_per_endpoint_and_model(db):
    """On SQLite and Postgres: one row per endpoint and model, the newest window wins."""
    store = EndpointContexts(db)
    await store.learn("http://a/v1", "small", 2048, NOW)
    await store.learn("http://a/v1", "big", 8192, NOW)
    await store.learn("http://a/v1", "small", 4096, NOW)
    assert await store.all() == {("http://a/v1", "small"): 4096, ("http://a/v1", "big"): 8192}
