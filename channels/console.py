"""The console channel: an interactive terminal chat for people, and a pipe mode (one message
per input line, each reply on stdout, exit at end of input) for scripts and tests.

It takes the same road as every channel: gateway (inbox, access, per-user queue) in, outbox
out. The person at the terminal is the local owner.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import IO, Any, Protocol

from bot.channel import ChannelFeatures
from bot.envelopes import (
    ApprovalPrompt,
    EventType,
    IncomingMessage,
    LoopEvent,
    OutboundMessage,
)
from bot.sanitize import clean_text

QUIT_WORDS = {"/quit", "/exit"}
ADDRESS = "local"


class Door(Protocol):
    """The part of the gateway a channel talks to."""

    async def receive(self, msg: IncomingMessage) -> Any: ...

    async def wait_idle(self) -> None: ...


class ConsoleChannel:
    """Sender side: prints what the outbox delivers, and progress while a turn runs."""

    name = "console"
    features = ChannelFeatures(max_chars=1_000_000)

    def __init__(self, out: IO[str], *, jsonl: bool = False, show_progress: bool = False
                 ) -> None:
        self.out = out
        self.jsonl = jsonl
        self.show_progress = show_progress
        self._dim = out.isatty() if hasattr(out, "isatty") else False

    async def send(self, message: OutboundMessage) -> str:
        if self.jsonl:
            record: dict[str, Any] = {"reply": message.text,
                                      "stop_reason": message.stop.value if message.stop else None}
            if message.prompts:
                record["approvals"] = [p.to_json() for p in message.prompts]
            self.out.write(json.dumps(record) + "\n")
        elif self.show_progress:  # a person at the terminal: mark who is speaking
            self.out.write(f"valet › {render(message)}\n\n")
        else:
            self.out.write(render(message) + "\n")
        self.out.flush()
        return f"console-{message.id}"

    async def edit(self, address: str, message_id: str, text: str) -> None:
        """A terminal cannot change what it printed: the outcome is a new line."""
        await self._line(text)

    async def answer_button(self, answer_ref: str, text: str) -> None:
        return None  # no buttons on a terminal

    async def typing(self, address: str) -> None:
        return None

    async def _line(self, text: str) -> None:
        self.out.write((f"\033[2m{text}\033[0m" if self._dim else text) + "\n")
        self.out.flush()

    async def progress(self, address: str, event: LoopEvent) -> None:
        if self.show_progress and event.type is EventType.TOOL_CALL_START:
            text = f"  … {event.data.get('progress') or event.data['name']}"
            self.out.write((f"\033[2m{text}\033[0m" if self._dim else text) + "\n")
            self.out.flush()


def render(message: OutboundMessage) -> str:
    """Plain text, with numbered choices for anything waiting on the person."""
    parts = [message.text] if message.text else []
    parts += [render_prompt(p) for p in message.prompts]
    return "\n".join(parts)


def render_prompt(prompt: ApprovalPrompt) -> str:
    n = prompt.position
    lines = [f"[{n}] {prompt.summary} (code {prompt.code})"]
    lines += [f"    {k}: {v}" for k, v in prompt.details]
    choices = "yes / no" + (" / or say what to change" if prompt.allow_modification else "")
    lines.append(f"    Reply {n} yes or {n} no ({choices}).")
    return "\n".join(lines)


class ConsoleChat:
    """Reader side: turns lines typed (or piped) into inbound messages for the gateway."""

    def __init__(self, door: Door, *, now: Callable[[], datetime] = lambda: datetime.now(UTC)
                 ) -> None:
        self.door = door
        self.now = now
        self._ids = itertools.count(1)
        self._session = f"{os.getpid()}-{time.time_ns()}"

    async def say(self, text: str) -> None:
        await self.door.receive(IncomingMessage(
            channel="console", address=ADDRESS, text=text, received_at=self.now(),
            external_id=f"console-{self._session}-{next(self._ids)}"))
        await self.door.wait_idle()

    async def run_pipe(self, stdin: IO[str] | IO[bytes]) -> int:
        # Bytes, decoded here with replacement: a line that is not UTF-8 is still a message,
        # and never an exception that ends the chat before the next line is read.
        source: IO[Any] = getattr(stdin, "buffer", stdin)
        while True:
            line = await asyncio.to_thread(source.readline)
            if not line:
                await self.door.wait_idle()  # messages recovered at start-up finish too
                return 0
            text = clean_text(line).strip()
            if text:
                await self.say(text)

    async def run_interactive(self, banner: str,
                              read: Callable[[str], Awaitable[str]] | None = None) -> int:
        read = read or (lambda prompt: asyncio.to_thread(input, prompt))
        print(banner)
        while True:
            try:
                text = clean_text(await read("you › ")).strip()
            except (EOFError, KeyboardInterrupt):
                print()
                return 0
            if text.lower() in QUIT_WORDS:
                return 0
            if text:
                await self.say(text)


def stdout_channel(jsonl: bool, interactive: bool) -> ConsoleChannel:
    if hasattr(sys.stdout, "reconfigure"):  # a terminal that cannot show a character gets "?"
        sys.stdout.reconfigure(errors="replace")
    return ConsoleChannel(sys.stdout, jsonl=jsonl, show_progress=interactive)
