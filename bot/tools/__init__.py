"""Tools, one seam: `@tool` and the registry (`registry`), one call run to its outcome
(`calls`), the groups the model opens when it needs them (`capabilities`), the router that opens
the groups a message names (`capability_router`) and the tools a conversation was offered kept
offered (`offer`).

A tool module of one's own (docs/extending.md) imports what it writes a tool with from here:
`from bot.tools import ToolExecutionContext, ToolOutcome, tool`. Valet's own code imports each
module by its name.
"""

from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import ToolOutcome, tool

__all__ = ["ToolExecutionContext", "ToolOutcome", "tool"]
