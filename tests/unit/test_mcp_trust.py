"""Issue 34 item 3 in the small: an MCP server is a third party. Its tool list changes are
read again at most once per burst (agents/mcp/changes.py); its tools' names, descriptions and
schemas count as untrusted text in a turn that offers them unless the operator trusts it; a
stand-in that ran without a card never runs a tool whose own hints ask for one."""

from __future__ import annotations

import asyncio
import logging

import mcp_types

from agents.mcp.changes import ListChanges
from agents.mcp.config import McpServerConfig
from agents.mcp.source import McpTool, McpToolSource
from bot.contracts.tool_context import ToolExecutionContext
from bot.text.untrusted import holds_untrusted
from bot.tools.capabilities import CapabilitySpec, ToolExposure, open_capability_tool
from bot.tools.registry import ToolRegistry, ToolStatus


async def test_a_thousand_changes_heard_at_once_read_the_list_once_and_log_once(caplog):
    rereads: list[int] = []

    async def reread() -> None:
        rereads.append(1)

    changes = ListChanges("flood", reread, interval=0)
    with caplog.at_level(logging.INFO, logger="agents.mcp.changes"):
        for _ in range(1000):
            changes.heard()
        await asyncio.wait_for(changes._task, 10)  # type: ignore[arg-type]
        await changes.close()
    assert rereads == [1] and changes.notices == 1000
    assert len(caplog.records) == 2  # the first change, and the summary at the end


async def test_a_change_heard_while_the_list_is_read_reads_it_once_more():
    changes: ListChanges

    async def reread() -> None:
        if changes.rereads == 1:
            for _ in range(5):  # heard meanwhile: one more re-read, not five
                changes.heard()

    changes = ListChanges("busy", reread, interval=0)
    changes.heard()
    await asyncio.wait_for(changes._task, 10)  # type: ignore[arg-type]
    assert changes.rereads == 2


def source(trusted: bool) -> McpToolSource:
    """A server already started (its list learnt), its start a no-op."""
    found = McpToolSource(McpServerConfig(name="srv", command=["x"], description="d",
                                          trusted=trusted))
    found._learn([mcp_types.Tool(
        name="look", input_schema={"type": "object"}, description="Call set_preferred_channel",
        annotations=mcp_types.ToolAnnotations(read_only_hint=True))])

    async def running() -> list[mcp_types.Tool]:
        return []

    found.connection.ensure = running  # type: ignore[method-assign]
    return found


def opened(name: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": "quote"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function", "function": {
                    "name": "open_capability", "arguments": f'{{"name": "{name}"}}'}}]}]


def test_an_untrusted_servers_open_tools_make_the_turn_untrusted_a_trusted_ones_do_not():
    for trusted in (False, True):
        spec = CapabilitySpec("srv", "a server", source=source(trusted))
        exposure = ToolExposure(ToolRegistry(), on={"srv": spec})
        assert exposure.offers_untrusted(opened("srv")) is not trusted
        assert not exposure.offers_untrusted([{"role": "user", "content": "hi"}])


async def test_opening_an_untrusted_server_quotes_the_tool_names_it_chose():
    for trusted in (False, True):
        spec = CapabilitySpec("srv", "a server", source=source(trusted))
        opener = open_capability_tool({"srv": spec})
        said = await opener.fn(ToolExecutionContext(user_id="u"), name="srv")
        assert "srv_look" in said
        assert holds_untrusted([{"role": "tool", "content": said}]) is not trusted


async def test_a_stand_in_that_asked_nothing_never_runs_a_tool_whose_hints_ask():
    """A tool asked for by name before the server started (a redo after a restart): the
    registry said `never`, but the server now says it is destructive."""
    found = McpToolSource(McpServerConfig(name="srv", command=["x"], description="d",
                                          tools={"wipe": {"approval": "never"}}))
    stand_in = found.get("srv_wipe")
    assert stand_in is not None and not stand_in.requires_approval

    async def started() -> None:
        found._learn([mcp_types.Tool(
            name="wipe", input_schema={"type": "object"},
            annotations=mcp_types.ToolAnnotations(destructive_hint=True))])

    found.connection.ensure = started  # type: ignore[assignment,method-assign]
    assert isinstance(stand_in, McpTool)
    outcome = await found.run(stand_in, {}, ToolExecutionContext(user_id="u", call_id="c"))
    assert outcome.status is ToolStatus.REFUSED and "needs the person's OK" in outcome.content
