"""The console channel: an interactive terminal chat for people (channels.console.tty), and a
pipe mode (one message per input line, each reply on stdout, exit at end of input) for scripts
and tests.

It takes the same road as every channel: gateway (inbox, access, per-user queue) in, outbox
out. The person at the terminal is the local owner. The chat waits for the reply to each of
its messages on an event: the outbox row that answers inbox row N is keyed `reply:N`, and the
channel's `send` resolves the waiter for that key.

Pipe mode's contract: stdout carries the replies to messages a previous run left unfinished
(those come first, before the first new line is read; with --jsonl they are marked
`"earlier_run": true`, and a note on stderr says so in both modes), then exactly one reply per
input line, in order. Anything nobody in this run asked for afterwards (a reminder that fell
due) goes to stderr, so replies and input lines stay one to one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any, Protocol

from bot.channel import ChannelSender
from bot.contracts.envelopes import (
    ApprovalPrompt,
    EventType,
    IncomingMessage,
    LoopEvent,
    OutboundMessage,
)
from bot.text.sanitize import clean_text
from channels.console.traits import TRAITS
from persona.lines import DEFAULT, fill
from persona.lines_channels import TerminalLines

QUIT_WORDS = {"/quit", "/exit"}
ADDRESS = "local"
# Only a safety net for a turn that ends without any reply (nothing to say): the reply itself
# is awaited on an event, this never delays it.
NO_REPLY_CHECK_SECONDS = 0.5


class Door(Protocol):
    """The part of the gateway a channel talks to."""

    async def receive_row(self, msg: IncomingMessage) -> tuple[Any, int | None]: ...

    async def wait_idle(self, poll: float = ...) -> None: ...


class Screen(Protocol):
    """Where the channel writes: plain streams in pipe mode, the line editor's screen when a
    person is at the terminal."""

    def reply(self, text: str) -> None: ...

    def note(self, text: str) -> None: ...

    def event(self, event: LoopEvent) -> None: ...


class StreamScreen:
    """Pipe mode: replies on `out` (one per line read), notes on `err`."""

    def __init__(self, out: IO[str], err: IO[str]) -> None:
        self.out, self.err = out, err

    def reply(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        self.err.write(f"valet: {text}\n")
        self.err.flush()

    def event(self, event: LoopEvent) -> None:
        return None  # scripts want the replies only


class ConsoleChannel(ChannelSender):
    """Sender side: shows what the outbox delivers, resolving the chat's waiter for it."""

    traits = TRAITS

    def __init__(self, screen: Screen, *, lines: TerminalLines, jsonl: bool = False,
                 needs_approval: Callable[[str], bool] = lambda name: False,
                 strays_aside: bool = False) -> None:
        self.screen = screen
        self.lines = lines  # how a prompt asks for its answer
        self.jsonl = jsonl
        # Pipe mode: a message nobody in this run asked for goes to the notes (stderr).
        self.strays_aside = strays_aside
        # Tools gated by an approval: their "… deleting the note" line would claim an action
        # that has not happened, so no progress line is shown for them.
        self.needs_approval = needs_approval
        self.earlier_run = False  # set while replies to a previous run's messages are due
        self._waiters: dict[str, asyncio.Future[OutboundMessage]] = {}

    def expect(self, inbox_row: int) -> asyncio.Future[OutboundMessage]:
        """The reply to this inbox row, once it has been shown."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[f"reply:{inbox_row}"] = waiter
        return waiter

    def forget(self, inbox_row: int) -> None:
        self._waiters.pop(f"reply:{inbox_row}", None)

    async def send(self, message: OutboundMessage) -> str:
        waiter = self._waiters.pop(message.dedupe_key, None) if message.dedupe_key else None
        earlier = waiter is None and self.earlier_run
        if waiter is None and not earlier and self.strays_aside:
            self.screen.note(f"(not a reply to this run's input) {render(message, self.lines)}")
        else:
            self.screen.reply(self._format(message, earlier=earlier))
        if earlier:
            self.screen.note("(that answers a message left from an earlier run)")
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
        return f"console-{message.id}"

    def _format(self, message: OutboundMessage, *, earlier: bool) -> str:
        if not self.jsonl:
            return render(message, self.lines)
        record: dict[str, Any] = {"reply": message.text,
                                  "stop_reason": message.stop.value if message.stop else None}
        if message.prompts:
            record["approvals"] = [p.to_json() for p in message.prompts]
        if earlier:
            record["earlier_run"] = True
        return json.dumps(record)

    async def edit(self, address: str, message_id: str, text: str) -> None:
        """A terminal cannot change what it printed: the outcome is a new line."""
        self.screen.note(text)

    async def progress(self, address: str, event: LoopEvent) -> None:
        if event.type is EventType.TOOL_CALL_START and self.needs_approval(event.data["name"]):
            return
        self.screen.event(event)


def render(message: OutboundMessage, lines: TerminalLines = DEFAULT) -> str:
    """Plain text, with numbered choices for anything waiting on the person."""
    parts = [message.text] if message.text else []
    parts += [render_prompt(p, lines) for p in message.prompts]
    return "\n".join(parts)


def render_prompt(prompt: ApprovalPrompt, lines: TerminalLines = DEFAULT) -> str:
    """`1. <summary>` as in /pending; then the arguments the summary does not already show."""
    n = prompt.position
    shown = [f"{n}. {prompt.summary} (code {prompt.code})"]
    shown += [f"   {k}: {v}" for k, v in prompt.details if f"{k}: {v}" not in prompt.summary]
    ask = lines.terminal_prompt_changeable if prompt.allow_modification else lines.terminal_prompt
    shown.append("   " + fill(ask, n=n))
    return "\n".join(shown)


class ConsoleChat:
    """Reader side: turns lines typed (or piped) into inbound messages for the gateway, and
    waits for each one's reply."""

    def __init__(self, door: Door, channel: ConsoleChannel | None = None, *,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.door = door
        self.channel = channel
        self.now = now
        self._ids = itertools.count(1)
        self._session = f"{os.getpid()}-{time.time_ns()}"

    def message(self, text: str) -> IncomingMessage:
        return IncomingMessage(channel="console", address=ADDRESS, text=text,
                               received_at=self.now(),
                               external_id=f"console-{self._session}-{next(self._ids)}")

    async def send(self, text: str) -> asyncio.Future[Any] | None:
        """Hand a line to the gateway; the future is its reply (None: nothing will answer,
        e.g. a /stop that reached the running turn, whose own reply says it)."""
        result, row_id = await self.door.receive_row(self.message(text))
        if row_id is None or getattr(result, "value", result) != "accepted":
            return None
        if self.channel is None:  # another sender shows the replies: wait for quiet instead
            return asyncio.ensure_future(self.door.wait_idle())
        return self.channel.expect(row_id)

    async def wait(self, waiter: asyncio.Future[Any] | None) -> None:
        """Until the reply is shown; or until nothing is left to do, for a turn that ended
        without saying anything (rare: the check is slow and never delays a reply)."""
        if waiter is None:
            return
        idle = asyncio.ensure_future(self._quiet())
        try:
            await asyncio.wait([waiter, idle], return_when=asyncio.FIRST_COMPLETED)
        finally:
            idle.cancel()

    async def _quiet(self) -> None:
        # Looked at only once a reply is overdue: every look asks the database and wakes
        # the deliverer, which a reply on its way never needs.
        await asyncio.sleep(NO_REPLY_CHECK_SECONDS)
        await self.door.wait_idle(NO_REPLY_CHECK_SECONDS)

    async def say(self, text: str) -> None:
        await self.wait(await self.send(text))

    async def finish_earlier_run(self) -> None:
        """Replies to messages a previous run left unfinished come first, marked."""
        if self.channel is None:
            await self.door.wait_idle()
            return
        self.channel.earlier_run = True
        try:
            await self.door.wait_idle()
        finally:
            self.channel.earlier_run = False

    async def run_pipe(self, stdin: IO[str] | IO[bytes]) -> int:
        await self.finish_earlier_run()
        # Bytes, decoded here with replacement: a line that is not UTF-8 is still a message,
        # and never an exception that ends the chat before the next line is read.
        source: IO[Any] = getattr(stdin, "buffer", stdin)
        while True:
            line = await asyncio.to_thread(source.readline)
            if not line:
                return 0
            text = clean_text(line).strip()
            if text:
                await self.say(text)


def pipe_channel(jsonl: bool, needs_approval: Callable[[str], bool], lines: TerminalLines
                 ) -> ConsoleChannel:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character: "?"
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    return ConsoleChannel(StreamScreen(sys.stdout, sys.stderr), lines=lines, jsonl=jsonl,
                          needs_approval=needs_approval, strays_aside=True)
