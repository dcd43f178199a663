"""`valet chat` beside a running `valet serve`: the terminal attaches to the server's
loopback endpoint (channels.console.relay) instead of opening the database, and the turns run
in the server. What it shows is rendered by the same console channel as a local chat
(channels.console.ConsoleChannel, on a pipe or the line editor's screen).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import Any

import aiohttp

from channels.console.channel import ADDRESS, ConsoleChannel, ConsoleChat
from channels.console.link import Endpoint, event_of, message_of

log = logging.getLogger(__name__)

CONNECT_SECONDS = 5.0


class ServerGone(Exception):
    """The server closed the connection (it stopped)."""


class RemoteTerminal:
    """The connection: sends lines, reads what the server pushes into the channel."""

    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse,
                 channel: ConsoleChannel) -> None:
        self.http = http
        self.ws = ws
        self.channel = channel
        self._ids = itertools.count(1)
        self._requests: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def attach(cls, endpoint: Endpoint, channel: ConsoleChannel) -> RemoteTerminal | None:
        """Connected to the server, or None when it is not there (a file a killed server
        left): the chat then runs on its own."""
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None,
                                                                   connect=CONNECT_SECONDS))
        try:
            ws = await http.ws_connect(endpoint.url, heartbeat=30.0,
                                       headers={"Authorization": f"Bearer {endpoint.token}"})
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            log.info("no valet serve at %s (%s): chatting on its own", endpoint.url, err)
            await http.close()
            return None
        return cls(http, ws, channel)

    async def send(self, text: str, external_id: str) -> asyncio.Future[Any] | None:
        """Hand a line to the server; the future is its reply (None: nothing will answer,
        e.g. a /stop that reached the running turn)."""
        return await self._request({"type": "message", "text": text,
                                    "external_id": external_id})

    async def wait_idle(self, poll: float = 0.0) -> None:
        """Until every line this terminal sent is answered."""
        await self._request({"type": "idle"})

    async def _request(self, data: dict[str, Any]) -> Any:
        request_id = next(self._ids)
        answer = asyncio.get_running_loop().create_future()
        self._requests[request_id] = answer
        try:
            await self.ws.send_json({**data, "id": request_id})
            return await answer
        finally:
            self._requests.pop(request_id, None)

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                if frame.type is aiohttp.WSMsgType.TEXT:
                    await self._dispatch(frame.json())
        finally:
            for answer in self._requests.values():
                if not answer.done():
                    answer.set_exception(ServerGone("valet serve closed the connection"))

    async def _dispatch(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "accepted":
            # Registered here, before the next frame is read: the reply may be that frame.
            row = data.get("row")
            waiter = self.channel.expect(int(row)) if row is not None and \
                data.get("result") == "accepted" else None
            self._answer(data, waiter)
        elif kind == "idle":
            self._answer(data, None)
        elif kind == "message":
            await self.channel.send(message_of(data["message"]))
        elif kind == "event":
            await self.channel.progress(ADDRESS, event_of(data["event"]))
        elif kind == "note":
            await self.channel.edit(ADDRESS, "", str(data.get("text", "")))

    def _answer(self, data: dict[str, Any], value: Any) -> None:
        answer = self._requests.get(int(data.get("id") or 0))
        if answer is not None and not answer.done():
            answer.set_result(value)

    @property
    def closed(self) -> bool:
        return self._reader.done()

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self.http.close()


class RemoteChat(ConsoleChat):
    """ConsoleChat whose lines go to the server: the same pipe loop and the same waiting for
    each reply, the door being the connection."""

    def __init__(self, terminal: RemoteTerminal, **kwargs: Any) -> None:
        super().__init__(terminal, terminal.channel, **kwargs)  # type: ignore[arg-type]
        self.terminal = terminal

    async def send(self, text: str) -> asyncio.Future[Any] | None:
        return await self.terminal.send(text, self.message(text).external_id)
