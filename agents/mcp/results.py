"""A tool result as the model sees it: the server's words are data, quoted as untrusted (like
mail and web pages); images, audio and binary resources are described, not inlined (a tool
result carries text only); structured content is shown as JSON unless a text block already
says the same; long results are cut and say so."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any

from bot.text.untrusted import quote_untrusted

if TYPE_CHECKING:
    import mcp_types


def result_text(server: str, tool: str, result: mcp_types.CallToolResult,
                max_chars: int) -> str:
    """The result (or the tool's own error) for the model, quoted and capped."""
    body = _body(result)
    note = ""
    if len(body) > max_chars:
        note = f"Note: the result was cut to {max_chars} of {len(body)} characters.\n"
        body = body[:max_chars]
    who = f"the {server} server's {tool} tool"
    if result.is_error:
        return (f"Error: {tool} failed; {who} said:\n{note}"
                + quote_untrusted(body or "(no details)", note=f"the text below is {who}'s "
                                  "error message"))
    if not body:
        return f"{tool} finished and returned nothing."
    return note + quote_untrusted(body, note=f"the text below is what {who} returned")


def error_text(server: str, tool: str, message: str) -> str:
    """An MCP protocol error (unknown tool, bad arguments...), for the model to read."""
    return (f"Error: the {server} server refused {tool}:\n"
            + quote_untrusted(message or "(no details)",
                              note=f"the text below is the {server} server's error message"))


def _body(result: mcp_types.CallToolResult) -> str:
    parts = [_block(block) for block in result.content]
    texts = [p for p in parts if p]
    structured = result.structured_content
    if structured is not None and not any(_covers(t, structured) for t in texts):
        texts.append(json.dumps(structured, ensure_ascii=False, indent=1, default=str))
    return "\n\n".join(texts)


def _block(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_size(block.data)}; not shown to you]"
    if kind == "resource_link":
        return f"[a link to a resource: {block.name} <{block.uri}>" + \
            (f", {block.mime_type}" if block.mime_type else "") + "]"
    if kind == "resource":
        inner = block.resource
        text = getattr(inner, "text", None)
        if text is not None:
            return f"[resource <{inner.uri}>]\n{text}"
        return f"[resource <{inner.uri}>: {inner.mime_type or 'binary'}, " \
            f"{_size(getattr(inner, 'blob', ''))}; not shown to you]"
    return f"[{kind or 'unknown'} content; not shown to you]"


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data)
    return f"{n} bytes"


def _covers(text: str, structured: Any) -> bool:
    """The text already says what the structured content does (servers often send both;
    a wrapped `{"result": ...}` is how a plain return value travels)."""
    if _same_json(text, structured):
        return True
    if isinstance(structured, dict) and set(structured) == {"result"}:
        inner = structured["result"]
        return text == inner or _same_json(text, inner)
    return False


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except (json.JSONDecodeError, ValueError):
        return False
