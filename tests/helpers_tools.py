"""A tool module for registry tests."""

from __future__ import annotations

from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import tool


@tool
async def shout(ctx: ToolExecutionContext, text: str) -> str:
    """Say it loudly.

    Args:
        text: what to say
    """
    return f"{text.upper()} (volume {ctx.settings.get('volume')})"


@tool
async def whisper(text: str) -> str:
    """Say it softly.

    Args:
        text: what to say
    """
    return text.lower()
