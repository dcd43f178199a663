"""The third-party text of a request, for telling the model's own voice from its quoting: the
tool results it read (a page, a mail, an MCP server's answer), the quoted blocks of untrusted
data anywhere (a forwarded message, a recalled memory written from a page:
bot.text.untrusted). (An untrusted MCP server's tool descriptions taint the turn where they
are offered: bot.loop.calls.) Call markup or a closing thinking tag that stands here is a
quote when the answer repeats it (bot.llm.reading)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_BLOCK = re.compile(r"<<<untrusted data ([0-9a-f]{16})>>>\n(.*?)\n<<<end untrusted data \1>>>",
                    re.S)


def third_party_text(messages: Iterable[Mapping[str, Any]]) -> str:
    parts: list[str] = []
    for message in messages:
        for text in _texts(message.get("content")):
            if message.get("role") == "tool":
                parts.append(text)
            elif "<<<untrusted data " in text:
                parts.extend(m.group(2) for m in _BLOCK.finditer(text))
    return "\n".join(parts)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):  # parts: text beside images
        return [p["text"] for p in content
                if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return []
