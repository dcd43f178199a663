"""Reading a body whole but never more than a limit: a single `read(n)` returns whatever has
arrived (a 254 KB feed came back as 98 KB), so the stream is read until it ends or passes the
limit, and the rest is never downloaded."""

from __future__ import annotations

import aiohttp


async def read_capped(stream: aiohttp.StreamReader, limit: int,
                      chunk: int = 65536) -> tuple[bytes, bool]:
    """Up to `limit` bytes of the stream, and whether it held more (then reading stopped)."""
    parts: list[bytes] = []
    size = 0
    async for piece in stream.iter_chunked(chunk):
        parts.append(piece)
        size += len(piece)
        if size > limit:
            return b"".join(parts)[:limit], True
    return b"".join(parts), False
