"""`valet chat` with a person at the terminal: a line editor (prompt_toolkit) in Valet's own
event loop, never a reading thread.

- Editing and history (kept in the data directory); a pasted text, however long and however
  many lines, arrives whole (bracketed paste, no terminal line limit).
- Alt-Enter (or Esc, Enter) starts a new line in the message; Enter sends it.
- Ctrl-C clears the line; on an empty line a second Ctrl-C (or Ctrl-D) leaves. While a turn
  runs, Ctrl-C stops it: `/stop` goes through the gateway like any message, so the turn ends
  as CANCELLED with its own short reply and nothing is replayed at the next start.
- While Valet works, a spinner on the line above the input says so; streamed text appears
  there as it arrives and moves up line by line; everything is printed above the prompt
  (patch_stdout), so tool progress never collides with what the person is typing. A
  message typed during a turn is queued at once (durable) and a note says it waits.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.styles import Style

from bot.contracts.envelopes import EventType, LoopEvent
from bot.plumbing.private import private_file
from bot.text.sanitize import clean_text
from channels.console.channel import QUIT_WORDS, ConsoleChannel, ConsoleChat
from persona.lines_channels import TerminalLines

DIM, RESET = "\033[2m", "\033[0m"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
REFRESH_SECONDS = 0.1
PROMPT = "you › "
SPEAKER = "valet › "
STYLE = Style.from_dict({"status": "#888888"})


class TtyScreen:
    """What the person sees: replies and notes above the prompt, the turn's state below it."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self._write = write or _stdout_write
        self.busy = 0  # messages sent and not yet answered
        self.stopping = False
        self._partial = ""  # streamed text of the current line, not yet moved up
        self._streamed: list[str] = []  # whole lines of this reply already printed
        # Progress lines shown since the last reply: each says what it says once per turn
        # (eight capabilities opened are one "… getting ready", not eight).
        self._progress: set[str] = set()

    # --- above the prompt ---------------------------------------------------------------

    def reply(self, text: str) -> None:
        shown = "\n".join(self._streamed)
        if shown and text.startswith(shown):
            rest = text[len(shown):].lstrip("\n")
            out = rest + "\n" if rest else ""
        else:
            out = f"{SPEAKER}{text}\n"
        self._partial, self._streamed = "", []
        self._progress.clear()
        self._write(out + "\n")

    def note(self, text: str) -> None:
        self._write(f"{DIM}{text}{RESET}\n")

    def event(self, event: LoopEvent) -> None:
        if event.type is EventType.MESSAGE_CHUNK:
            self._stream(str(event.data.get("text", "")))
        elif event.type is EventType.MESSAGE_END and event.data.get("tool_calls"):
            self._partial, self._streamed = "", []  # text before tool calls: shown, done
        elif event.type is EventType.TOOL_CALL_START:
            line = f"  … {event.data.get('progress') or event.data['name']}"
            if line not in self._progress:
                self._progress.add(line)
                self.note(line)

    def _stream(self, chunk: str) -> None:
        self._partial += chunk
        while "\n" in self._partial:
            line, self._partial = self._partial.split("\n", 1)
            self._write((SPEAKER if not self._streamed else "") + line + "\n")
            self._streamed.append(line)

    # --- the prompt: the turn's state on the line above the input -------------------------

    def prompt(self) -> FormattedText:
        """A line of its own (no terminal size query needed, unlike a bottom toolbar)."""
        if not self.busy:
            return FormattedText([("", PROMPT)])
        # By the clock: prompt_toolkit asks for the prompt several times per redraw.
        spin = SPINNER[int(time.monotonic() / REFRESH_SECONDS) % len(SPINNER)]
        if self.stopping:
            state = "stopping…"
        else:
            waiting = f" ({self.busy - 1} more waiting)" if self.busy > 1 else ""
            what = self._partial[-60:] if self._partial else "thinking…"
            state = f"{what}{waiting}   (Ctrl-C stops)"
        return FormattedText([("class:status", f"{spin} {state}\n"), ("", PROMPT)])


def _stdout_write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


class InteractiveChat:
    """The prompt loop: read a line, hand it to the gateway, let the reply come to the screen
    while the person may already type the next one."""

    def __init__(self, chat: ConsoleChat, screen: TtyScreen, history: Path) -> None:
        self.chat = chat
        self.screen = screen
        self.history = history
        self._leave_armed = False  # a Ctrl-C on an empty line: the next one leaves
        self._replies: set[asyncio.Task[None]] = set()

    def _keys(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("escape", "enter")  # Alt-Enter (Esc, Enter): a new line, not a send
        def _newline(event: KeyPressEvent) -> None:
            event.app.current_buffer.insert_text("\n")

        @keys.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            buffer = event.app.current_buffer
            if self.screen.busy:
                self._stop_turn()
            elif buffer.text:
                buffer.reset()
                self._leave_armed = False
            elif self._leave_armed:
                event.app.exit(exception=EOFError())
            else:
                self._leave_armed = True
                self.screen.note("(Ctrl-C again or Ctrl-D to leave)")

        return keys

    def _stop_turn(self) -> None:
        if self.screen.stopping:
            return
        self.screen.stopping = True
        self.screen.note("(stopping…)")
        task = asyncio.ensure_future(self.chat.send("/stop"))
        self._replies.add(task)  # type: ignore[arg-type]
        task.add_done_callback(self._replies.discard)

    async def run(self, banner: str) -> int:
        private_file(self.history)  # what the owner typed: 0600, any umask
        session: PromptSession[str] = PromptSession(
            history=FileHistory(str(self.history)), key_bindings=self._keys(),
            refresh_interval=REFRESH_SECONDS, style=STYLE)
        print(banner)
        with patch_stdout(raw=True):
            while True:
                try:
                    text = await session.prompt_async(self.screen.prompt)
                except (EOFError, KeyboardInterrupt):
                    break
                self._leave_armed = False
                text = clean_text(text).strip()
                if text.lower() in QUIT_WORDS:
                    break
                if text:
                    await self._send(text)
        await self._leave()
        return 0

    async def _send(self, text: str) -> None:
        if self.screen.busy:
            self.screen.note("(waits for the current reply)")
        waiter = await self.chat.send(text)
        if waiter is None:
            return
        self.screen.busy += 1
        task = asyncio.create_task(self._await_reply(waiter))
        self._replies.add(task)
        task.add_done_callback(self._replies.discard)

    async def _await_reply(self, waiter: Any) -> None:
        try:
            await self.chat.wait(waiter)
        finally:
            self.screen.busy -= 1
            if not self.screen.busy:
                self.screen.stopping = False

    async def _leave(self) -> None:
        """Leaving while a turn runs stops it: nothing is replayed at the next start."""
        if self.screen.busy:
            self._stop_turn()
        if self._replies:
            await asyncio.wait(set(self._replies), timeout=10)


def tty_channel(needs_approval: Callable[[str], bool], lines: TerminalLines
                ) -> tuple[ConsoleChannel, TtyScreen]:
    if hasattr(sys.stdout, "reconfigure"):  # a terminal that cannot show a character: "?"
        sys.stdout.reconfigure(errors="replace")
    screen = TtyScreen()
    return ConsoleChannel(screen, lines=lines, needs_approval=needs_approval), screen
