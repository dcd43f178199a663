"""Whether one of an MCP server's tools asks the person first. A server is a third party: what
it says of its own tools (its annotations) are hints that can only add caution, never remove
it.

    destructiveHint: true                          always asks
    the registry says `approval: never`            runs (the operator's word)
    the registry says `approval: always`           asks
    `trusted: true` server, readOnlyHint: true     runs
    anything else                                  asks
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.mcp.config import McpServerConfig, ToolPolicy
from bot.tools.registry import CHANGES, READS

if TYPE_CHECKING:
    import mcp_types


def asks_first(config: McpServerConfig, policy: ToolPolicy,
               annotations: mcp_types.ToolAnnotations | None) -> bool:
    read_only = annotations is not None and annotations.read_only_hint is True
    destructive = annotations is not None and annotations.destructive_hint is True
    if destructive:
        return True
    if policy.approval != "auto":
        return policy.approval == "always"
    return not (config.trusted and read_only)


def declared_effect(config: McpServerConfig, policy: ToolPolicy,
                    annotations: mcp_types.ToolAnnotations | None) -> str:
    """What the registry counts a server's tool as (bot.tools.registry.EFFECTS): a read only when a
    trusted server says it only reads and the operator lets it run unasked; anything else
    is a change (it asks in a tainted turn)."""
    return READS if config.trusted and not asks_first(config, policy, annotations) \
        else CHANGES


def stand_in_asks_first(policy: ToolPolicy | None) -> bool:
    """A tool asked for before the server started in this process: its annotations are not
    known yet, so only the operator's `approval: never` skips the card (and the real tool's
    hints are checked again when it runs: McpToolSource.run)."""
    return not (policy is not None and policy.approval == "never")
