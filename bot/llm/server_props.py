"""What a llama.cpp server says of itself at /props (next to, not under, its /v1 API): how
many requests it runs at once (`total_slots`), for bot.llm.person_first. Other servers have
no /props: None."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp

log = logging.getLogger(__name__)

PROPS_TIMEOUT = 3.0


def props_url(base_url: str) -> str:
    """http://host:8080/v1 -> http://host:8080/props"""
    root = base_url.rstrip("/")
    return (root[:-3] if root.endswith("/v1") else root) + "/props"


async def server_props(base_url: str | None, http: aiohttp.ClientSession) -> dict[str, Any]:
    """The server's /props, or {} when it has none (or is not reached)."""
    if not base_url:
        return {}  # OpenAI itself
    try:
        async with http.get(props_url(base_url),
                            timeout=aiohttp.ClientTimeout(total=PROPS_TIMEOUT)) as answer:
            if answer.status != 200:
                return {}
            props = await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as err:
        log.debug("no /props at %s: %s", base_url, err)
        return {}
    return props if isinstance(props, dict) else {}


async def server_slots(base_url: str | None, http: aiohttp.ClientSession) -> int | None:
    """How many requests the server runs at once, where it says (llama.cpp's
    `total_slots`); None when it does not."""
    slots = (await server_props(base_url, http)).get("total_slots")
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 \
        else None
