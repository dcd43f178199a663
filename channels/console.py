"""The console channel: an interactive terminal chat for people, and a pipe mode (one message
per input line, each reply on stdout, exit at end of input) for scripts and tests."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import IO, Protocol

from bot.envelopes import Inbound, Reply
from bot.loop import EventType, LoopEvent

QUIT_WORDS = {"/quit", "/exit", "quit", "exit"}


class Conversation(Protocol):
    def stream_message(self, msg: Inbound) -> AsyncIterator[LoopEvent | Reply]: ...


class ConsoleChat:
    def __init__(self, conversation: Conversation, user_id: str, *,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.conversation = conversation
        self.user_id = user_id
        self.now = now
        self._count = 0

    def _inbound(self, text: str) -> Inbound:
        self._count += 1
        stamp = self.now()
        return Inbound(user_id=self.user_id, channel="console", text=text, received_at=stamp,
                       external_id=f"console-{stamp.timestamp():.6f}-{self._count}",
                       address="local")

    async def run_pipe(self, stdin: IO[str], stdout: IO[str], *, jsonl: bool = False) -> int:
        while True:
            line = await asyncio.to_thread(stdin.readline)
            if not line:
                return 0
            text = line.strip()
            if not text:
                continue
            reply = None
            async for item in self.conversation.stream_message(self._inbound(text)):
                if isinstance(item, Reply):
                    reply = item
            if reply is None or reply.silent:
                continue
            if jsonl:
                stdout.write(json.dumps({"reply": render(reply),
                                         "stop_reason": reply.stop_reason}) + "\n")
            else:
                stdout.write(render(reply) + "\n")
            stdout.flush()

    async def run_interactive(self, banner: str) -> int:
        dim = (lambda s: f"\033[2m{s}\033[0m") if sys.stdout.isatty() else (lambda s: s)
        print(banner)
        while True:
            try:
                line = await asyncio.to_thread(input, "you › ")
            except (EOFError, KeyboardInterrupt):
                print()
                return 0
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT_WORDS:
                return 0
            async for item in self.conversation.stream_message(self._inbound(text)):
                if isinstance(item, LoopEvent) and item.type is EventType.TOOL_CALL_START:
                    print(dim(f"  … {item.data.get('progress') or item.data['name']}"))
                elif isinstance(item, Reply) and not item.silent:
                    print(f"valet › {render(item)}\n")


def render(reply: Reply) -> str:
    """Plain text with numbered choices for anything waiting on the user."""
    parts = [reply.text] if reply.text else []
    for i, approval in enumerate(reply.approvals, 1):
        render_approval = getattr(approval, "render_console", None)
        parts.append(render_approval(i) if render_approval else f"{i}. {approval}")
    return "\n".join(parts)
