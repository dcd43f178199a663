"""`valet mcp list` and `valet mcp tools NAME`: the MCP servers the registry names, and what
one of them offers (it is started for the look, with its secrets, then stopped)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.config import Settings

Say = Callable[[str], None]


def add_mcp_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="MCP servers: list them, or start one and list its tools")
    actions = mcp.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every MCP server in the registry (nothing is started)")
    tools = actions.add_parser("tools", help="start a server, list its tools and their policy")
    tools.add_argument("name", help="the server's name (see `valet mcp list`)")


async def run_mcp(settings: Settings, args: argparse.Namespace, say: Say = print) -> int:
    from agents.mcp.report import probe, server_line, tool_line
    from bot.app import build_agents
    from bot.app.database import open_database

    agents = build_agents(settings)  # ConfigError: `file:line: key: what`, exit 2
    servers = agents.mcp_servers
    if args.action == "list":
        if not servers:
            say("no MCP servers (add them under `mcp:` in a registry file; see "
                "docs/capabilities.md)")
        for source in servers.values():
            say(server_line(source))
        return 0
    if args.name not in servers:
        say(f"no MCP server named {args.name!r} (known: {', '.join(servers) or 'none'})")
        return 1
    source = servers[args.name]
    db = await open_database(settings.database_url)
    try:
        status = await source.attach(settings, db)
        if status.state.value != "on":
            say(f"{args.name}: not started: {status.detail}")
            return 1
        found = await probe(source)
    finally:
        await db.close()
    if not found.started:
        say(f"{args.name}: could not start: {found.error}")
        return 1
    say(f"{server_line(source)}: {len(found.tools)} tool(s)")
    for tool in found.tools:
        say(f"  {tool_line(tool)}")
    for name in found.unknown_policies:
        say(f"  note: the registry sets a policy for {name!r}, which the server does not offer")
    return 0
