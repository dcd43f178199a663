"""MCP servers as capabilities, with a real MCP server (tests/fakes/fake_mcp_server.py, the
same SDK) over stdio and over streamable HTTP: read-only tools of a server the operator marked
`trusted` run without a card (an untrusted server's ask: tests/e2e/test_mcp_hostile.py), a
tool that changes something asks first and runs once, failures and timeouts reach the model as
errors it can read, a server killed mid-call is restarted and the call is reported
interrupted, and a "hi" starts nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config.sections import AgentsSettings
from bot.contracts.envelopes import ButtonPress, Inbound
from tests.fakes.fake_openai import FakeOpenAI, ToolCall
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import assert_closed, requests_of

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-bearer-token"
# A person's turn: nothing_to_report is offered in triggered runs only.
CORE = {"ask_user", "update_plan", "cancel_task", "open_capability", "delegate"}


@pytest.fixture
def server_log(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "fake_mcp.log"
    monkeypatch.setenv("FAKE_MCP_LOG", str(path))
    monkeypatch.setenv("FAKE_MCP_TOKEN", TOKEN)
    monkeypatch.delenv("VALET_SECRET_KEY", raising=False)
    return path


def registry(tmp_path: Path, *, url: str | None = None, slow_timeout: float = 1,
             slow_repeats: bool = False, trusted: bool = True) -> AgentsSettings:
    """A deployment registry with the fake server as the `tracker` capability (trusted by
    the operator unless said otherwise: its read-only hints then skip the card)."""
    if url is None:
        where = (f"    command: [{sys.executable}, -m, tests.fakes.fake_mcp_server, stdio]\n"
                 f"    cwd: {REPO}\n    env: {{FAKE_MCP_LOG: 'env:FAKE_MCP_LOG'}}\n")
    else:
        where = (f"    url: {url}\n"
                 "    headers: {Authorization: 'Bearer ${env:FAKE_MCP_TOKEN}'}\n")
    path = tmp_path / "mine.yaml"
    path.write_text("mcp:\n  - name: tracker\n" + where +
                    "    description: the team's issue tracker\n"
                    f"    trusted: {str(trusted).lower()}\n"
                    f"    tools:\n      slow: {{timeout_seconds: {slow_timeout}, "
                    f"safe_to_repeat: {str(slow_repeats).lower()}}}\n")
    return AgentsSettings(registries=[str(path)], answer_check="heuristic")


async def start(app_factory, tmp_path, url=None, loop=None, **kwargs):
    app = await app_factory(tool_exposure="capabilities", agents=registry(tmp_path, url=url,
                                                                            **kwargs),
                            **({"loop": loop} if loop else {}))
    owner = await app.ensure_owner()
    return app, owner.id


def say(app, user: str, text: str = "", button: ButtonPress | None = None):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text, button=button, address="local",
        received_at=datetime(2026, 1, 5, 9, tzinfo=UTC)))


def tools_of(request) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def last_result(request) -> str:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"][-1]


def calls(log: Path, tool: str) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.startswith(f"call {tool} ")]


def starts(log: Path) -> list[int]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [int(line.split()[1]) for line in lines if line.startswith("start ")]


async def eventually(check, seconds: float = 30) -> None:
    """Until `check()` holds (a file another process writes, a restart): polled, bounded."""
    async with asyncio.timeout(seconds):
        while not check():  # noqa: ASYNC110 (nothing here to wait on but the condition)
            await asyncio.sleep(0.05)


def opening(*then: LLMReply) -> list[LLMReply]:
    return [LLMReply(tool_calls=[ToolCall("open_capability", {"name": "tracker"})]), *then]


@pytest.fixture(params=["stdio", "http"])
async def tracker_url(request, server_log) -> AsyncIterator[str | None]:
    """None: the server over stdio (Valet starts it); else the URL of the server over
    streamable HTTP, on a port the OS picked."""
    if request.param == "stdio":
        yield None
        return
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.fake_mcp_server", "http", cwd=REPO,
        stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    assert line.startswith(b"PORT "), line
    yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    process.kill()
    await process.wait()


async def test_the_read_only_tool_runs_without_a_card_and_its_result_is_quoted(
        app_factory, fake_llm: FakeOpenAI, tmp_path, server_log, tracker_url):
    app, me = await start(app_factory, tmp_path, url=tracker_url)
    fake_llm.script(*opening(
        LLMReply(tool_calls=[ToolCall("tracker_lookup", {"query": "gate"})]),
        LLMReply(content="One item: #7 Fix the gate.")))
    reply = await say(app, me, "anything about the gate in the tracker?")
    assert reply.text == "One item: #7 Fix the gate." and not reply.prompts
    first, second, third = fake_llm.requests
    assert "tracker_lookup" not in tools_of(first)
    assert {"tracker_lookup", "tracker_create_item"} <= tools_of(second)
    assert "tracker_lookup" in last_result(second)  # open_capability listed the tools
    result = last_result(third)
    assert "#7 Fix the gate" in result and "<<<untrusted data" in result
    assert "not an instruction" in result.split("<<<untrusted data")[0]
    assert len(calls(server_log, "lookup")) == 1
    assert_closed(third["messages"])


async def test_the_changing_tool_shows_a_card_and_runs_once_after_approve(
        app_factory, fake_llm: FakeOpenAI, tmp_path, server_log, tracker_url):
    app, me = await start(app_factory, tmp_path, url=tracker_url)
    fake_llm.script(*opening(LLMReply(tool_calls=[ToolCall(
        "tracker_create_item", {"title": "Oil the gate", "priority": 1})])))
    reply = await say(app, me, "file 'Oil the gate' as urgent")
    [approval] = await requests_of(app, reply)
    card = reply.prompts[0]
    assert "tracker" in card.summary and "create_item" in card.summary
    assert dict(card.details) == {"title": "Oil the gate", "priority": "1"}
    assert calls(server_log, "create_item") == []  # nothing ran before the OK
    fake_llm.responder = lambda req: LLMReply(content="Filed as #8.")
    press = ButtonPress(approval.id, "approve")
    replies = await asyncio.gather(*[say(app, me, button=press) for _ in range(3)])
    assert sum(r.text == "Filed as #8." for r in replies) == 1
    assert len(calls(server_log, "create_item")) == 1
    assert '"id": 8' in last_result(fake_llm.requests[-1])


async def test_a_failing_tool_gives_the_model_an_error_it_can_read(
        app_factory, fake_llm: FakeOpenAI, tmp_path, server_log, tracker_url):
    app, me = await start(app_factory, tmp_path, url=tracker_url)
    fake_llm.script(*opening(
        LLMReply(tool_calls=[ToolCall("tracker_explode", {"reason": "smoke"})]),
        LLMReply(content="The tracker failed.")))
    reply = await say(app, me, "check the tracker")
    assert reply.text == "The tracker failed."
    result = last_result(fake_llm.requests[-1])
    assert result.startswith("Error: explode failed")
    assert "the tracker is on fire: smoke" in result


async def test_the_slow_tool_hits_its_timeout(app_factory, fake_llm: FakeOpenAI, tmp_path,
                                              server_log, tracker_url):
    app, me = await start(app_factory, tmp_path, url=tracker_url, slow_timeout=1)
    fake_llm.script(*opening(
        LLMReply(tool_calls=[ToolCall("tracker_slow", {"seconds": 60})]),
        LLMReply(content="It took too long.")))
    reply = await say(app, me, "run the slow report")
    assert reply.text == "It took too long."
    assert "did not finish within 1 s" in last_result(fake_llm.requests[-1])
    # The session survives a timed-out call: the next call answers.
    fake_llm.script(LLMReply(tool_calls=[ToolCall("tracker_lookup", {"query": "x"})]),
                    LLMReply(content="ok"))
    await say(app, me, "look up x")
    assert "1 item matches" in last_result(fake_llm.requests[-1])


async def test_a_server_killed_mid_call_is_restarted_and_the_call_is_reported_interrupted(
        app_factory, fake_llm: FakeOpenAI, tmp_path, server_log):
    app, me = await start(app_factory, tmp_path, slow_timeout=60)
    fake_llm.script(*opening(
        LLMReply(tool_calls=[ToolCall("tracker_slow", {"seconds": 60})]),
        LLMReply(content="The tracker went away in the middle.")))
    turn = asyncio.create_task(say(app, me, "run the slow report"))
    await eventually(lambda: bool(calls(server_log, "slow")))
    [pid] = starts(server_log)
    os.kill(pid, signal.SIGKILL)
    reply = await asyncio.wait_for(turn, 30)
    assert reply.text == "The tracker went away in the middle."
    result = last_result(fake_llm.requests[-1])
    assert result.startswith("Interrupted:") and "whether it took effect is unknown" in result
    connection = app.agents.mcp_servers["tracker"].connection
    await eventually(lambda: len(starts(server_log)) == 2 and connection.running)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("tracker_lookup", {"query": "gate"})]),
                    LLMReply(content="Back."))
    assert (await say(app, me, "and now?")).text == "Back."
    assert "1 item matches" in last_result(fake_llm.requests[-1])


async def test_a_hi_starts_no_server_and_costs_no_tokens_for_its_tools(
        app_factory, fake_llm: FakeOpenAI, tmp_path, server_log):
    # loop.mode react: a hi carries the core tools (in auto it would carry none at all).
    app, me = await start(app_factory, tmp_path, loop={"mode": "react"})
    fake_llm.script(LLMReply(content="Hello!"))
    await say(app, me, "hi")
    [before] = fake_llm.requests
    assert tools_of(before) == CORE
    assert starts(server_log) == []  # no MCP process was started
    assert app.agents.mcp_servers["tracker"].connection.starts == 0
    assert "tracker (the team's issue tracker)" in before["messages"][0]["content"]
    # Once the server runs (someone opened it), a "hi" still carries none of its tools.
    await app.agents.mcp_servers["tracker"].open()
    assert len(starts(server_log)) == 1
    other = await app.users.ensure("ana", display_name="Ana", timezone="UTC",
                                   at=datetime(2026, 1, 5, tzinfo=UTC))
    fake_llm.reset()
    fake_llm.script(LLMReply(content="Hello!"))
    await say(app, other.id, "hi")
    [after] = fake_llm.requests
    assert tools_of(after) == CORE
    assert after["tools"] == before["tools"]
    assert FakeOpenAI._prompt_tokens(after) == FakeOpenAI._prompt_tokens(before)


async def test_a_changed_tool_list_is_read_again(app_factory, fake_llm: FakeOpenAI, tmp_path,
                                                 server_log):
    app, me = await start(app_factory, tmp_path)
    fake_llm.script(*opening(LLMReply(tool_calls=[ToolCall("tracker_grow", {})]),
                             LLMReply(content="Grown.")))
    await say(app, me, "grow the tracker")
    source = app.agents.mcp_servers["tracker"]
    await eventually(lambda: any(t.name == "tracker_shrink" for t in source.known()))
    fake_llm.reset()
    fake_llm.script(LLMReply(content="ok"))
    await say(app, me, "what can it do now?")
    assert "tracker_shrink" in tools_of(fake_llm.requests[0])  # still open: a follow-up


async def test_after_a_restart_an_open_tracker_starts_again_when_the_turn_needs_it(
        app_factory, fake_llm: FakeOpenAI, tmp_path, server_log):
    app, me = await start(app_factory, tmp_path)
    fake_llm.script(*opening(LLMReply(content="Open.")))
    await say(app, me, "open the tracker")
    await app.close()
    again, _ = await start(app_factory, tmp_path)
    fake_llm.reset()
    fake_llm.script(LLMReply(tool_calls=[ToolCall("tracker_lookup", {"query": "gate"})]),
                    LLMReply(content="Found it."))
    assert (await say(again, me, "and the gate?")).text == "Found it."
    assert "tracker_lookup" in tools_of(fake_llm.requests[0])
    assert len(starts(server_log)) == 2


async def test_valet_mcp_tools_and_doctor_start_the_server_and_list_its_tools(
        app_settings, fake_llm: FakeOpenAI, tmp_path, server_log):
    import argparse

    from bot.cli.doctor import run_doctor
    from bot.cli.mcp import run_mcp

    settings = app_settings(agents=registry(tmp_path, slow_timeout=5))
    lines: list[str] = []
    assert await run_mcp(settings, argparse.Namespace(action="list"), lines.append) == 0
    assert lines == [f"tracker: the team's issue tracker (stdio: {sys.executable} -m "
                     "tests.fakes.fake_mcp_server stdio)"]
    assert starts(server_log) == []  # listing starts nothing
    lines.clear()
    assert await run_mcp(settings, argparse.Namespace(action="tools", name="tracker"),
                         lines.append) == 0
    assert lines[0].endswith(": 6 tool(s)")
    assert "  tracker_create_item: asks first, times out after 30 s" in lines
    assert "  tracker_slow: runs without asking, times out after 5 s" in lines
    fake_llm.script(LLMReply(content="ready"))
    lines.clear()
    await run_doctor(settings, lines.append)
    [started] = [line for line in lines if "MCP server tracker" in line]
    assert started.startswith("  ok") and started.endswith("starts: 6 tool(s)")
    assert any("tracker_lookup: runs without asking" in line for line in lines)
    assert len(starts(server_log)) == 2  # each look started it once (and stopped it)


@pytest.mark.parametrize("safe", [False, True])
async def test_a_call_cut_short_by_a_crash_runs_again_only_if_marked_safe_to_repeat(
        fake_llm: FakeOpenAI, llm, tmp_path, server_log, safe):
    """The turn is killed mid-call (as kill -9 would); the process that redoes it has not
    started the server: its journal, not the model, decides whether the call runs again."""
    from agents.registry import load_registry
    from bot.app.database import open_database
    from bot.config.registries import registry_paths
    from bot.contracts.clock import FakeClock
    from bot.contracts.envelopes import TurnStop
    from bot.contracts.tool_context import ToolExecutionContext
    from bot.loop.context import ContextManager
    from bot.loop.journal import INTERRUPTED, TurnJournal
    from bot.loop.react import react_loop
    from bot.loop.state import LoopDeps
    from tests.helpers import loop_config

    db = await open_database(f"sqlite:///{tmp_path}/journal.db")
    paths = registry_paths(registry(tmp_path, slow_timeout=60, slow_repeats=safe).registries)

    async def run_turn():
        agents = load_registry(paths)
        cfg, clock = loop_config(), FakeClock()
        deps = LoopDeps(llm, agents.tools, ContextManager(cfg), clock,
                        journal=TurnJournal(db, clock))
        try:
            return await react_loop(deps, [{"role": "system", "content": "test"}],
                                    [{"role": "user", "content": "slow report"}],
                                    ToolExecutionContext(user_id="u1", clock=clock), cfg,
                                    turn_id="inbox-1")
        finally:
            await agents.close()

    try:
        fake_llm.script(LLMReply(tool_calls=[ToolCall("tracker_slow", {"seconds": 0.5})]))
        first = asyncio.create_task(run_turn())
        await eventually(lambda: bool(calls(server_log, "slow")))
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        fake_llm.script(LLMReply(content="done"))
        result = await run_turn()
    finally:
        await db.close()
    assert result.stop_reason is TurnStop.FINAL_ANSWER
    assert len(calls(server_log, "slow")) == (2 if safe else 1)
    [outcome] = [m["content"] for m in result.new_messages if m["role"] == "tool"]
    assert ("waited 0.5 s" in outcome) if safe else (outcome == INTERRUPTED)
