"""What `valet doctor` and `valet mcp` say about a server: where it runs, whether it starts,
its tools and the policy each one gets. Nothing printed carries a secret (references are
shown as written: `env:GITHUB_TOKEN`, never their values)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.mcp.connection import McpUnavailable
from agents.mcp.source import McpTool, McpToolSource


@dataclass(frozen=True)
class Probe:
    """One start of a server, for a report."""

    started: bool
    error: str = ""
    tools: list[McpTool] = field(default_factory=list)
    # Tools the registry sets a policy for that the server does not offer (a typo?).
    unknown_policies: list[str] = field(default_factory=list)


async def probe(source: McpToolSource) -> Probe:
    """Start the server (its secrets read as for a turn), list its tools, stop it."""
    try:
        await source.open()
    except McpUnavailable as err:
        return Probe(False, str(err))
    finally:
        tools = [t for t in source.known() if isinstance(t, McpTool)]
        await source.close()
    offered = {t.remote for t in tools}
    return Probe(True, tools=tools,
                 unknown_policies=sorted(set(source.config.tools) - offered))


def server_line(source: McpToolSource) -> str:
    config = source.config
    return f"{config.name}: {config.description} ({config.transport}: {config.where})"


def tool_line(tool: McpTool) -> str:
    policy = "asks first" if tool.requires_approval else "runs without asking"
    extra = ", safe to repeat" if tool.safe_to_repeat else ""
    return f"{tool.name}: {policy}, times out after {tool.call_timeout:g} s{extra}"
