"""Request bodies from outside (the Telegram and Twilio webhooks, `POST /events`), read with a
bound: at most `max_bytes`, within `timeout_seconds`, JSON at most `max_depth` deep and an
object. Whatever is wrong becomes a `BodyError` (a 4xx status and a reason), answered as such
with one log line: never a 500, never a traceback. A client that goes away in the middle of
its body is a debug line (there is nobody left to answer).

One helper for every route, so each limit is enforced the same way everywhere: the server's
own `client_max_size` is the largest of them, and a route's smaller limit holds here.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BodyLimits:
    max_bytes: int = 64 * 1024
    timeout_seconds: float = 10.0  # for the whole body to arrive (a half-sent one is dropped)
    max_depth: int = 32  # JSON nesting


class BodyError(Exception):
    """The body cannot be taken: `status` (4xx) and why, in words for the sender."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ClientGone(BodyError):
    """The client closed the connection before its body was complete."""

    def __init__(self) -> None:
        super().__init__(400, "the connection closed before the body was complete")


async def read_body(request: web.Request, limits: BodyLimits) -> bytes:
    """The whole body, never more than `max_bytes` (a chunked body has no length to check
    first), and never waiting longer than `timeout_seconds` for it."""
    if request.content_length is not None and request.content_length > limits.max_bytes:
        raise BodyError(413, f"the body is {request.content_length} bytes; at most "
                             f"{limits.max_bytes} are accepted")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(limits.timeout_seconds):
            while chunk := await request.content.read(limits.max_bytes + 1 - size):
                chunks.append(chunk)
                size += len(chunk)
                if size > limits.max_bytes:
                    raise BodyError(413, f"the body is over {limits.max_bytes} bytes")
    except TimeoutError:
        raise BodyError(408, f"the body did not arrive within {limits.timeout_seconds:g}s"
                        ) from None
    except (ConnectionResetError, asyncio.IncompleteReadError):
        raise ClientGone() from None
    return b"".join(chunks)


async def read_json_object(request: web.Request, limits: BodyLimits) -> dict[str, Any]:
    """The body as a JSON object (a dict), checked for size, time, depth and shape."""
    raw = await read_body(request, limits)
    try:
        value = json.loads(raw)
    except RecursionError:
        raise BodyError(400, f"the JSON is nested more than {limits.max_depth} deep") from None
    except (UnicodeDecodeError, ValueError):
        raise BodyError(400, "the body is not JSON") from None
    if not isinstance(value, dict):
        raise BodyError(400, f"the body must be a JSON object, not {_kind(value)}")
    if depth(value) > limits.max_depth:
        raise BodyError(400, f"the JSON is nested more than {limits.max_depth} deep")
    return value


def depth(value: Any) -> int:
    """How deeply objects and arrays nest (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[Any] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def refused(request: web.Request, err: BodyError, *, json_reply: bool = False
            ) -> web.Response:
    """The answer to a body that cannot be taken, and its one log line."""
    if isinstance(err, ClientGone):
        log.debug("%s %s: %s", request.method, request.path, err.reason)
    else:
        log.warning("%s %s refused (%d): %s", request.method, request.path, err.status,
                    err.reason)
    if json_reply:
        return web.json_response({"error": err.reason}, status=err.status)
    return web.Response(status=err.status, text=err.reason)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
