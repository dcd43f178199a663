"""An outbox message as WhatsApp shows it: the LLM's markdown in WhatsApp's own marks
(*bold*, _italic_, ~strike~, ```code```), cut into messages Twilio takes (wire.MAX_BODY) where
a reader expects a pause (a card in words when it cannot be buttons: channels.plain_cards)."""

from __future__ import annotations

import re

from bot.text.split import split_text
from channels.whatsapp.wire import MAX_BODY

_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.DOTALL)
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]+)\]\(([^)\s]+)[^)]*\)")
_BULLET = re.compile(r"^(\s*)[*+]\s+", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{3,}")
_PAUSE = re.compile(r"\n\n|(?<=[.!?…])\s+|\n")


def _link(match: re.Match[str]) -> str:
    label, url = match.group(1).strip(), match.group(2)
    return url if label in (url, url.split("://", 1)[-1].rstrip("/")) else f"{label} ({url})"


def whatsapp_text(markdown: str) -> str:
    """Markdown in WhatsApp's marks: **b** -> *b*, *i* -> _i_, ~~s~~ -> ~s~, a heading bold,
    a link as "label (url)"; code fences stay (WhatsApp shows ``` as monospace)."""
    text = _LINK.sub(_link, markdown)
    text = _BULLET.sub(r"\1- ", text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _BOLD.sub(r"*\2*", text)
    text = _STRIKE.sub(r"~\1~", text)
    text = _HEADING.sub(r"*\1*", text)
    return _BLANK_LINES.sub("\n\n", text).strip()


def _cut(text: str, limit: int) -> int:
    """Where the first message ends: the last paragraph, sentence or line end within the
    limit (past its half), else the last space, else the limit."""
    ends = [m.end() for m in _PAUSE.finditer(text[:limit + 1]) if m.end() <= limit]
    good = [end for end in ends if end > limit // 2]
    if good:
        return good[-1]
    space = text.rfind(" ", 0, limit + 1)
    return space if space > limit // 2 else limit


def split_messages(text: str, limit: int = MAX_BODY) -> list[str]:
    return split_text(text, limit, _cut)
