"""A deployment's tool module with a mistake: an argument type no JSON schema can describe
(the registry refuses it when it loads, naming the file and line)."""

from __future__ import annotations

from bot.tools.registry import tool


class Opaque:
    """Not a type pydantic can describe."""


@tool
async def opaque(thing: Opaque) -> str:
    """Takes a thing.

    Args:
        thing: The thing.
    """
    return "ok"
