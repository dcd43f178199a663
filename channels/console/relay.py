"""The console channel inside `valet serve`: the owner's terminal (`valet chat`) attached over
a loopback websocket, so the owner can chat beside the bot, SQLite or not.

The turn runs here, in the server's process, as the owner on the console channel, through the
same gateway as every other channel (inbox, per-person queue, outbox). The terminal only
reads lines and shows what this relay pushes: the owner's replies and notifications, the
turn's progress, an approval's outcome. With no terminal attached, a message for the console
is dead-lettered at once, as it was before this relay existed (nobody is there to read it).

Each terminal's own messages are acknowledged ("accepted", with the inbox row) before any
reply can be pushed to it: both go under the terminal's lock, so it always knows which reply
answers which line.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from bot.channel import ChannelSender, PermanentSendError
from bot.contracts.envelopes import EventType, IncomingMessage, LoopEvent, OutboundMessage
from bot.text.sanitize import clean_text
from channels.console.channel import ADDRESS
from channels.console.link import PATH, event_json, message_json
from channels.console.traits import TRAITS

log = logging.getLogger(__name__)

NO_TERMINAL = "no terminal attached (valet chat is not running)"


class TerminalDoor(Protocol):
    """What the relay needs of the gateway."""

    async def receive_row(self, msg: IncomingMessage) -> tuple[Any, int | None]: ...

    async def wait_answered(self, row_id: int, poll: float = ...) -> None: ...


@dataclass(eq=False)
class _Terminal:
    ws: web.WebSocketResponse
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    rows: set[int] = field(default_factory=set)  # its messages not known to be answered

    async def push(self, data: dict[str, Any]) -> None:
        async with self.lock:
            await self.ws.send_json(data)


class ConsoleRelay(ChannelSender):
    traits = TRAITS
    # A window on the owner's conversation, not somewhere to send what nobody asked for
    # there: a notification falls back to the owner's phone or Telegram, never to it.
    routable = False

    def __init__(self, door: TerminalDoor, *, token: str,
                 needs_approval: Callable[[str], bool] = lambda name: False,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.door = door
        self._token = token
        self.needs_approval = needs_approval
        self.now = now
        self._terminals: set[_Terminal] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    # --- the channel (what the outbox delivers through) ------------------------------------

    async def send(self, message: OutboundMessage) -> str:
        if not self._terminals:
            raise PermanentSendError(NO_TERMINAL)
        await self._broadcast({"type": "message", "message": message_json(message)})
        return f"console-{message.id}"

    async def edit(self, address: str, message_id: str, text: str) -> None:
        await self._broadcast({"type": "note", "text": text})

    async def progress(self, address: str, event: LoopEvent) -> None:
        # An approval-gated tool's "… deleting the note" would claim what has not happened.
        if event.type is EventType.TOOL_CALL_START and self.needs_approval(event.data["name"]):
            return
        await self._broadcast({"type": "event", "event": event_json(event)})

    async def _broadcast(self, data: dict[str, Any]) -> None:
        for terminal in list(self._terminals):
            try:
                await terminal.push(data)
            except (ConnectionError, RuntimeError):  # it went away meanwhile
                self._terminals.discard(terminal)

    # --- the terminals' side ---------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        return [web.get(PATH, self._attach)]

    async def _attach(self, request: web.Request) -> web.StreamResponse:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not hmac.compare_digest(given.encode(), self._token.encode()):
            return web.Response(status=403, text="forbidden")
        ws = web.WebSocketResponse(heartbeat=30.0)
        await ws.prepare(request)
        terminal = _Terminal(ws)
        self._terminals.add(terminal)
        log.info("console: a terminal attached")
        try:
            async for frame in ws:
                if frame.type is not WSMsgType.TEXT:
                    continue
                try:
                    data = frame.json()
                    await self._handle(terminal, data)
                except (ValueError, KeyError, TypeError):
                    log.warning("console: a terminal sent something unreadable; ignored")
        finally:
            self._terminals.discard(terminal)
            log.info("console: a terminal left")
        return ws

    async def _handle(self, terminal: _Terminal, data: dict[str, Any]) -> None:
        if data["type"] == "message":
            msg = IncomingMessage(channel="console", address=ADDRESS,
                                  text=clean_text(str(data["text"])), received_at=self.now(),
                                  external_id=str(data["external_id"]))
            async with terminal.lock:  # no reply reaches it before it knows the row
                result, row = await self.door.receive_row(msg)
                if row is not None:
                    terminal.rows.add(row)
                await terminal.ws.send_json({"type": "accepted", "id": data["id"], "row": row,
                                             "result": getattr(result, "value", str(result))})
        elif data["type"] == "idle":
            task = asyncio.create_task(self._answered(terminal, data["id"]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answered(self, terminal: _Terminal, request_id: Any) -> None:
        """Tell the terminal once every message it sent is answered (its reply delivered)."""
        rows = set(terminal.rows)
        await asyncio.gather(*(self.door.wait_answered(row) for row in rows))
        terminal.rows -= rows
        with contextlib.suppress(ConnectionError, RuntimeError):
            await terminal.push({"type": "idle", "id": request_id})

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for terminal in list(self._terminals):
            await terminal.ws.close()
        self._terminals.clear()
