"""Cutting a long text into messages: the loop every channel's splitter shares. Each channel
says how long a text is for it (characters, UTF-16 units) and where a message should end."""

from __future__ import annotations

from collections.abc import Callable


def split_text(text: str, limit: int, cut: Callable[[str, int], int],
               length: Callable[[str], int] = len) -> list[str]:
    """Messages of at most `limit` (by `length`): while the rest is too long, `cut(rest,
    limit)` says where the next message ends; whitespace at the cut is dropped."""
    parts: list[str] = []
    rest = text.strip()
    while length(rest) > limit:
        at = cut(rest, limit)
        parts.append(rest[:at].rstrip())
        rest = rest[at:].lstrip()
    if rest:
        parts.append(rest)
    return parts
