"""Hostile content and broken bytes, as users meet them: a page built to freeze the parser, a
message that is not valid text, a huge message before a long turn. On SQLite and Postgres."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from agents.tools import web_fetch
from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import GatewaySettings
from bot.contracts.envelopes import Inbound
from bot.contracts.tool_context import ToolExecutionContext
from bot.gateway.deps import ReceiveResult
from bot.llm.port import ToolCall as LLMToolCall
from bot.tools.calls import run_tool_call
from bot.tools.registry import ToolRegistry, ToolStatus
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, incoming, said

HOSTILE_PAGE = "<a" * 150_000  # html.parser: ~11 s of CPU on the event loop
DIRTY_BYTES = b"ok\x00 then \xff\xfe bad bytes \x1b[31m and \xc3"
SERVED = web.AppKey("served", asyncio.Event)


def page(html: str):  # type: ignore[no-untyped-def]
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")
    return handler


@pytest.fixture
async def pages() -> AsyncIterator[TestServer]:
    app = web.Application()

    async def hostile(request: web.Request) -> web.Response:
        request.app[SERVED].set()
        return web.Response(text=HOSTILE_PAGE, content_type="text/html")

    async def dirty(request: web.Request) -> web.Response:
        return web.Response(body=DIRTY_BYTES, content_type="text/plain")

    app[SERVED] = asyncio.Event()
    app.router.add_get("/hostile", hostile)
    app.router.add_get("/dirty", dirty)
    app.router.add_get("/many", page("<p>x" * 500_000))  # 2 MB, ~2.5 s to walk in the worker
    app.router.add_get("/deep", page("<div>" * 300 + "buried" + "</div>" * 300 + "<p>after"))
    async with TestServer(app, host="127.0.0.1") as server:
        yield server


@pytest.fixture
async def gateway_app(db_url, app_factory):
    """An app on SQLite or Postgres with a recording `test` channel for alice and bob, and
    web_fetch allowed to reach the loopback test server."""

    async def make(**overrides):
        access = AccessSettings(channels={"test": ChannelAccess(
            policy="pairing", allow=["alice", "bob"])})
        app = await app_factory(
            database_url=db_url, access=access,
            tools={"web_fetch": {"allow_private_addresses": True, "timeout_seconds": 20}},
            **overrides)
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.start()
        return app, sender

    return make


async def history_of(app, address: str) -> list[dict]:
    user = await app.identities.resolve("test", address)
    return await app.history.load(user.id)


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_a_page_built_to_freeze_the_parser_does_not_hold_up_another_user(
        gateway_app, fake_llm, pages):
    # A 0.5 s stall would be logged and recorded; parsing that page with html.parser on the
    # event loop held it for ~11 s.
    app, sender = await gateway_app(stall_warning_ms=500)
    url = f"http://127.0.0.1:{pages.port}/hostile"

    async def respond(req):
        last = req["messages"][-1]
        if last["role"] == "user" and said(last["content"]) == "read that page":
            return LLMReply(tool_calls=[ToolCall("web_fetch", {"url": url})])
        if last["role"] == "tool":
            return LLMReply(content="The page has no readable text.")
        return LLMReply(content="Hello Bob.")

    fake_llm.responder = respond
    await app.gateway.receive(incoming("read that page", address="alice"))
    await asyncio.wait_for(pages.app[SERVED].wait(), 10)
    await app.gateway.receive(incoming("hi", address="bob"))  # while the page is parsed
    await app.gateway.wait_idle()
    assert sender.texts("bob") == ["Hello Bob."]
    assert sender.texts("alice") == ["The page has no readable text."]
    fetched = next(tool_results(r) for r in fake_llm.requests if tool_results(r))
    assert fetched[0].startswith(f"URL: {url}\nStatus: 200 OK\nContent-Type: text/html")
    # No stall was the parse: the loop's thread was never seen in it. (Not "no stall at all":
    # on a loaded machine a process kept off the CPU for half a second looks the same to the
    # monitor, wherever its loop was; the parse on the loop held it for seconds, in it.)
    parsing = [s for s in app.stall_monitor.stalls
               if "html_text.py" in s.stack or "html/parser.py" in s.stack]
    assert parsing == []


async def test_a_page_too_slow_to_turn_into_text_is_given_up_at_its_bound(pages):
    ctx = ToolExecutionContext(user_id="u", settings={"allow_private_addresses": True,
                                                      "parse_timeout_seconds": 0.05})
    registry = ToolRegistry([web_fetch.web_fetch.__valet_tool__])
    call = LLMToolCall("c1", "web_fetch",
                       json.dumps({"url": f"http://127.0.0.1:{pages.port}/many"}))
    outcome = await run_tool_call(registry, call, ctx, timeout=30)
    assert outcome.status is ToolStatus.FAILED
    assert outcome.content == ("Error: ValueError: the page could not be turned into text "
                               "within 0.05 s")


async def test_a_page_nested_past_the_parser_limit_says_what_is_missing(pages):
    ctx = ToolExecutionContext(user_id="u", settings={"allow_private_addresses": True})
    text = await web_fetch.web_fetch(ctx, f"http://127.0.0.1:{pages.port}/deep")
    assert "Note: the page nests deeper than the parser follows" in text
    assert "buried" not in text


async def test_a_message_with_broken_bytes_is_stored_and_answered(gateway_app, fake_llm):
    # mid_turn queue: one turn, one reply per message (with steer, messages sent in a burst
    # may join the turn already running: tests/integration/test_steering.py).
    app, sender = await gateway_app(gateway=GatewaySettings(mid_turn="queue"))
    fake_llm.responder = lambda req: LLMReply(content="Got it.")
    texts = ["lone \ud800 surrogate", "nul\x00inside", "bell\x07 and \x9b csi", "emoji 👍🏽 ok",
             "עברית and e\u0301", "raw \udcff escape"]
    for text in texts:
        result = await app.gateway.receive(
            incoming(text, address="alice", name="Al\x00\ud800ice"))
        assert result is ReceiveResult.ACCEPTED
    await app.gateway.wait_idle()
    assert sender.texts("alice") == ["Got it."] * len(texts)
    stored = [m["content"] for m in await history_of(app, "alice") if m["role"] == "user"]
    assert stored == ["lone \ufffd surrogate", "nulinside", "bell and  csi", "emoji 👍🏽 ok",
                          "עברית and e\u0301", "raw \ufffd escape"]


async def test_a_fetched_page_with_nul_and_bad_bytes_is_stored_and_answered(
        gateway_app, fake_llm, pages):
    app, sender = await gateway_app()
    url = f"http://127.0.0.1:{pages.port}/dirty"
    fake_llm.script(LLMReply(tool_calls=[ToolCall("web_fetch", {"url": url})]),
                    LLMReply(content="It says ok."))
    await app.gateway.receive(incoming("what does it say?", address="alice"))
    await app.gateway.wait_idle()
    assert sender.texts("alice") == ["It says ok."]
    stored = [m for m in await history_of(app, "alice") if m["role"] == "tool"]
    assert "\nok then \ufffd\ufffd bad bytes [31m and \ufffd\n<<<end untrusted data " in \
        stored[0]["content"]


def inbound(user: str, text: str) -> Inbound:
    return Inbound(user_id=user, channel="console", text=text,
                   received_at=datetime(2026, 1, 5, 9, tzinfo=UTC))


def fifty_calls() -> LLMReply:
    return LLMReply(tool_calls=[ToolCall("calculate", {"expression": f"{i}+1"})
                                for i in range(50)])


async def test_after_a_huge_message_a_fifty_call_turn_always_sends_the_question(
        app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    fake_llm.script(LLMReply(content="That is a lot of text."))
    await app.orchestrator.handle_message(inbound(owner.id, "x" * 500_000))
    fake_llm.reset()
    fake_llm.script(fifty_calls(), fifty_calls(), LLMReply(content="All 100 computed."))
    reply = await app.orchestrator.handle_message(inbound(owner.id, "compute the hundred sums"))
    assert reply.text == "All 100 computed."
    assert len(fake_llm.requests) == 3
    for request in fake_llm.requests:
        users = [said(m["content"]) for m in request["messages"] if m["role"] == "user"]
        assert users[-1] == "compute the hundred sums"


async def test_a_huge_question_with_a_fifty_call_turn_is_sent_cut_in_every_request(
        app_factory, fake_llm):
    app = await app_factory()
    owner = await app.ensure_owner()
    question = "".join(f"line {i:07d}\n" for i in range(40_000))  # 520 KB
    fake_llm.script(fifty_calls(), LLMReply(content="Done."))
    reply = await app.orchestrator.handle_message(inbound(owner.id, question))
    assert reply.text == "Done."
    for request in fake_llm.requests:
        users = [m["content"] for m in request["messages"] if m["role"] == "user"]
        assert users[-1].startswith("line 0000000\nline 0000001\n")
        assert "the message was cut to fit" in users[-1]
    stored = [m["content"] for m in await app.history.load(owner.id) if m["role"] == "user"]
    assert stored == [question]  # the history keeps it whole


async def test_llm_output_with_nul_and_broken_surrogates_is_stored_and_delivered(
        gateway_app, fake_llm):
    app, sender = await gateway_app()
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7\u0000"})]),
        LLMReply(content="It is 42\u0000 \ud83d!"))
    await app.gateway.receive(incoming("6 times 7?", address="alice"))
    await app.gateway.wait_idle()
    assert sender.texts("alice") == ["It is 42 \ufffd!"]
    stored = await history_of(app, "alice")
    assert json.loads(stored[1]["tool_calls"][0]["function"]["arguments"]) == {
        "expression": "6*7"}
    assert stored[2]["content"].endswith("= 42")
    assert stored[-1]["content"] == "It is 42 \ufffd!"
