"""Text is cleaned where it enters: from a channel, from a tool, from the LLM.

What goes: bytes that are not UTF-8 and lone surrogates (each becomes U+FFFD, the replacement
character, so the reader sees that something was there), NUL and the other C0 and C1 control
characters and DEL. What stays: line breaks (CR LF and lone CR become LF) and tabs, and every
printable character: emoji (with their joiners and modifiers), combining marks, right-to-left
text and its direction marks.

Why: a lone surrogate cannot be encoded (SQLite, Postgres, stdout and JSON all raise), and
Postgres refuses NUL in text, so such a message would be lost; control characters also let a
sender redraw a terminal or hide words from the owner.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from bot.contracts.envelopes import IncomingMessage

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_CR = re.compile("\r\n?")


def clean_text(text: str | bytes | None) -> str:
    """`text` safe to store, send and show (see the module's doc); bytes are read as UTF-8."""
    if text is None:
        return ""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    if _SURROGATE.search(text):
        # UTF-16 keeps a valid pair (an emoji split in two) and replaces a lone half.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if "\r" in text:
        text = _CR.sub("\n", text)
    return _CONTROL.sub("", text)


def clean_incoming(msg: IncomingMessage) -> IncomingMessage:
    """The message with its sender-written text and display name cleaned."""
    text, name = clean_text(msg.text), clean_text(msg.display_name)
    if text == msg.text and name == msg.display_name:
        return msg
    return replace(msg, text=text, display_name=name)


def clean_json_text(raw: str | None) -> str:
    """JSON written by the LLM (tool-call arguments), cleaned as text and, when it parses,
    also inside its strings (an escaped NUL or lone surrogate would come back when parsed)."""
    text = clean_text(raw)
    if "\\u" not in text:
        return text
    try:
        value = json.loads(text)
        cleaned = _clean_value(value)
    except (ValueError, RecursionError):  # not JSON: the loop tells the LLM so
        return text
    return text if cleaned == value else json.dumps(cleaned, ensure_ascii=False)


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_value(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): _clean_value(v) for k, v in value.items()}
    return value
