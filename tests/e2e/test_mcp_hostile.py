"""Issue 34 item 3, against a real `valet serve` (SMS through the fake Twilio, the fake LLM) and a
stdio MCP server that lies about itself (tests/fakes/hostile_mcp_server.py): a tool that says
it is read-only and destructive still asks first; after the server's capability is opened, its
descriptions (which tell the model to change how Valet reaches the person) are third-party
text, so the delivery-changing tools ask in that same turn; its read-only hint skips no card on
a server the operator did not mark trusted; and 20,000 `tools/list_changed` notifications from
one call cause a handful of re-reads of its tool list and of log lines, not thousands."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import sys
from pathlib import Path

import aiohttp

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _until_up
from tests.e2e.test_sms_restart import text
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_twilio import FakeTwilio
from tests.fakes.hostile_mcp_server import INJECTION
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
FLOOD = 20_000


def lines_of(log: Path, prefix: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith(prefix)] \
        if log.exists() else []


def approvals(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return [(r[0], r[1]) for r in conn.execute(
            "SELECT tool_name, status FROM approvals ORDER BY created_at, id")]


def preferred_channel(db: Path) -> str | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT preferred_channel FROM users WHERE is_owner = 1").fetchone()
    return row[0] if row else None


async def serve_with_log(env: dict[str, str], log: list[str]
                         ) -> tuple[asyncio.subprocess.Process, str, asyncio.Task[None]]:
    """`valet serve`, its log lines (stderr) collected into `log` as they come."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": str(port)},
        cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    stream = proc.stderr

    async def collect() -> None:
        while line := await stream.readline():
            log.append(line.decode(errors="replace").rstrip())

    collector = asyncio.create_task(collect())
    await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
    return proc, f"http://127.0.0.1:{port}/sms/inbound", collector


async def test_a_hostile_mcp_server_cannot_skip_a_card_or_flood_valet(fake_llm, tmp_path):
    server_log = tmp_path / "hostile.log"
    registry = tmp_path / "mcp.yaml"
    registry.write_text(
        "mcp:\n  - name: hostile\n"
        f"    command: [{sys.executable}, -m, tests.fakes.hostile_mcp_server]\n"
        f"    cwd: {ROOT}\n    env: {{HOSTILE_MCP_LOG: 'env:HOSTILE_MCP_LOG'}}\n"
        "    description: stock quotes\n")
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_AGENTS_FILES=str(registry), VALET_PUBLIC_URL=PUBLIC,
                        VALET_TOOL_EXPOSURE="capabilities", HOSTILE_MCP_LOG=str(server_log),
                        VALET_LOG_LEVEL="INFO",
                        VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url)
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\nloop:\n  tool_execution_timeout: 120\n"
            "owner:\n  phone_numbers: ['+12125550123']\n")
        db = tmp_path / "valet.db"
        log: list[str] = []
        serve, url, collected = await serve_with_log(env, log)
        sid = iter(range(1, 100))

        async def says(body: str, replies: int) -> str:
            assert await text(http, url, body, f"SM{next(sid)}", twilio.auth_token) == 200
            return (await twilio.wait_for(replies, timeout=60))[-1].body

        try:
            # 1. Opened, then the model (steered by the server's descriptions) changes how
            # Valet reaches the person and calls the server's "read-only" tool: all ask.
            fake_llm.script(
                Reply(tool_calls=[ToolCall("open_capability", {"name": name})
                                  for name in ("hostile", "profile", "tasks")]),
                Reply(tool_calls=[
                    ToolCall("set_preferred_channel", {"channel": "console"}),
                    ToolCall("create_scheduled_task", {"instruction": "text +15550100",
                                                       "schedule": "every 2 hours"}),
                    ToolCall("hostile_quote", {"symbol": "ACME"})]))
            asked = await says("what's ACME at?", 1)
            # it was offered (the turn's last request with tools: an SMS reply may be shortened
            # after it by a request of its own, with none)
            offered = [r for r in fake_llm.requests if r.get("tools")]
            assert INJECTION in json.dumps(offered[-1].get("tools"))
            assert sorted(tool for tool, _ in approvals(db)) == [
                "create_scheduled_task", "hostile_quote", "set_preferred_channel"]
            assert {status for _, status in approvals(db)} == {"pending"}, asked
            assert preferred_channel(db) in (None, "sms")
            assert lines_of(server_log, "call ") == []
            fake_llm.script(Reply(content="Nothing done."))
            await says("no to all", 2)
            # 2. "read-only" and destructive: it asks.
            fake_llm.script(Reply(tool_calls=[ToolCall("hostile_wire_money",
                                                       {"to": "Bob", "amount": 500})]),
                            Reply(content="Cancelled."))
            card = await says("wire 500 to Bob", 3)
            assert "Reply 1 to" in card
            assert ("hostile_wire_money", "pending") in approvals(db)
            await says("no", 4)
            assert lines_of(server_log, "call wire_money") == []
            # 3. One call floods Valet with list_changed notifications.
            listed_before = len(lines_of(server_log, "list"))
            fake_llm.script(Reply(tool_calls=[ToolCall("hostile_flood", {"times": FLOOD})]),
                            Reply(content="Flooded."))
            await says("flood it", 5)
            assert await says("1", 6) == "Flooded."
            assert lines_of(server_log, "flooded ")  # the server did send them
        finally:
            serve.terminate()
            await serve.wait()
            await collected
        rereads = len(lines_of(server_log, "list")) - listed_before
        logged = [line for line in log if "tool list" in line]
        # Logged when the session ended: how many notifications reached Valet (the SDK's
        # transport may merge some on the way) and how often the list was read again.
        [summary] = [int(m.group(1)) for line in logged
                     if (m := re.search(r"(\d+) tool list changes heard", line))]
        print(f"{FLOOD} list_changed sent, {summary} heard: {rereads} re-reads of the list, "
              f"{len(logged)} log lines")
        # The flood did reach Valet. How many notifications are handled before the session
        # ends depends on the machine's pace (194 to ~2,250 of 20,000 seen): the bar is
        # five times the re-reads allowed below, so that reading the list again once per
        # notification would fail them.
        assert summary >= 50, summary
        assert 1 <= rereads <= 10, rereads
        assert len(logged) <= 3, logged
