"""Progress while a turn runs: a typing indicator, and one status message per turn that is
edited in place ("Checking the weather..."), never sent and deleted.

The first status waits `delay` seconds: a turn that ends sooner shows nothing but typing.
EXECUTION_END (or the turn's reply being sent) ends the chat's status; the final answer
always arrives as a new message. State is per chat, so many users' turns never share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.contracts.envelopes import EventType, LoopEvent

log = logging.getLogger(__name__)

TYPING_EVERY = 4.5  # Telegram shows "typing" for about 5 seconds


@dataclass
class _Status:
    line: str = ""
    shown_line: str = ""
    message_id: int | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    has_line: asyncio.Event = field(default_factory=asyncio.Event)
    posting: bool = False  # the status message is on its way: let it land, then edit it


class ProgressBoard:
    def __init__(self, *, post: Callable[[str, str], Awaitable[int]],
                 edit: Callable[[str, int, str], Awaitable[None]],
                 typing: Callable[[str], Awaitable[None]], delay: float = 1.0) -> None:
        self._post, self._edit, self._typing = post, edit, typing
        self.delay = delay
        self._chats: dict[str, _Status] = {}

    async def on_event(self, chat: str, event: LoopEvent) -> None:
        if event.type is EventType.EXECUTION_END:
            await self.finish(chat)
            return
        status = self._chats.get(chat)
        if status is None:
            status = self._chats[chat] = _Status()
            status.tasks = [asyncio.create_task(self._keep_typing(chat)),
                            asyncio.create_task(self._show_later(chat, status))]
        if event.type is EventType.TOOL_CALL_START:
            status.line = str(event.data.get("progress") or
                              f"Working on {event.data.get('name', 'it')}…")
            status.has_line.set()
            if status.message_id is not None:
                await self._refresh(chat, status)

    async def finish(self, chat: str) -> None:
        """The turn is over: stop typing, and mark the status message done (kept, edited)."""
        status = self._chats.pop(chat, None)
        if status is None:
            return
        typing, show = status.tasks
        typing.cancel()
        if not status.posting:
            show.cancel()  # still waiting: the turn ended before a status was due
        for task in status.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if status.message_id is not None and status.shown_line:
            status.line = "✓ " + status.shown_line.rstrip(".…")
            await self._refresh(chat, status)

    async def _show_later(self, chat: str, status: _Status) -> None:
        await asyncio.sleep(self.delay)
        await status.has_line.wait()  # only a tool call has something to show
        status.posting = True
        async with status.lock:
            try:
                status.message_id = await self._post(chat, status.line)
                status.shown_line = status.line
            except Exception:
                log.debug("status message failed in chat %s", chat, exc_info=True)
                return
        await self._refresh(chat, status)  # a newer line may have come meanwhile

    async def _refresh(self, chat: str, status: _Status) -> None:
        async with status.lock:
            if status.message_id is None or status.line == status.shown_line:
                return
            line = status.line
            try:
                await self._edit(chat, status.message_id, line)
                status.shown_line = line
            except Exception:  # progress is a courtesy; the answer still comes
                log.debug("status edit failed in chat %s", chat, exc_info=True)

    async def _keep_typing(self, chat: str) -> None:
        while True:
            try:
                await self._typing(chat)
            except Exception:
                log.debug("typing indicator failed in chat %s", chat, exc_info=True)
            await asyncio.sleep(TYPING_EVERY)
