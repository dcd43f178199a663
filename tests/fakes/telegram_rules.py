"""Telegram's rules as the fake Bot API enforces them: message length after entity parsing,
callback data size, and HTML that must parse ("can't parse entities")."""

from __future__ import annotations

import html
import re

MAX_TEXT = 4096
MAX_CALLBACK_DATA = 64
ALLOWED_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre",
                "blockquote", "tg-spoiler", "span", "tg-emoji"}
_HTML_TOKEN = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s[^<>]*)?)>|&(#\d+|#x[0-9a-fA-F]+|"
                         r"lt|gt|amp|quot);|[<>&]")


class ApiError(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code, self.description, self.retry_after = code, description, retry_after


def parse_html(text: str) -> str:
    """The plain text Telegram would show, or ApiError as Telegram words it."""
    out: list[str] = []
    stack: list[str] = []
    pos = 0
    for m in _HTML_TOKEN.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        closing, tag, entity = m.group(1), m.group(2), m.group(4)
        if tag:
            tag = tag.lower()
            if tag not in ALLOWED_TAGS:
                raise ApiError(400, f"Bad Request: can't parse entities: Unsupported start tag "
                                    f"\"{tag}\" at byte offset {m.start()}")
            if closing:
                if not stack or stack[-1] != tag:
                    opened = stack[-1] if stack else tag
                    raise ApiError(400, "Bad Request: can't parse entities: Can't find end "
                                        f"tag corresponding to start tag \"{opened}\"")
                stack.pop()
            else:
                stack.append(tag)
        elif entity:
            out.append(html.unescape(f"&{entity};"))
        else:
            raise ApiError(400, "Bad Request: can't parse entities: Unsupported start tag at "
                                f"byte offset {m.start()}" if m.group(0) == "<" else
                                "Bad Request: can't parse entities: unescaped "
                                f"{m.group(0)!r} at byte offset {m.start()}")
    out.append(text[pos:])
    if stack:
        raise ApiError(400, "Bad Request: can't parse entities: Can't find end tag "
                            f"corresponding to start tag \"{stack[-1]}\"")
    return "".join(out)
