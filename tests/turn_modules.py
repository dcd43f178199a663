"""Which of Valet's modules a message runs: a profiler records every Valet function called
while one console message is handled, from the gateway's receive to the reply's delivery
(ConsoleChat.say returns once the console channel has sent it). Background work no message
causes is kept out of the window: the stall monitor's heartbeat is not started, and the
deliverer's poll ticks once an hour (`UNTICKED`). Used by tests/integration/
test_plain_chat.py and the `turn_modules` benchmark."""

from __future__ import annotations

import collections
import io
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from bot.app import App
from channels.console.channel import ConsoleChannel, ConsoleChat, StreamScreen

ROOT = Path(__file__).resolve().parents[1]
# The settings of an app whose modules are counted: the deliverer's poll, a timer no message
# causes, ticks once an hour. At its default (every second) it ticked inside a turn that a
# machine loaded by two whole suites slowed past a second, adding bot.plumbing.wake (61 > 60).
UNTICKED: dict[str, Any] = {"delivery": {"poll_seconds": 3600.0}}
PACKAGES = ("bot", "channels", "agents", "triggers", "persona")


def module_of(filename: str) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if rel.parts[0] not in PACKAGES or rel.suffix != ".py":
        return None
    return ".".join(rel.with_suffix("").parts).removesuffix(".__init__")


async def console_chat(app: App) -> ConsoleChat:
    """The console channel on `app`, its gateway and deliverer running (no stall monitor)."""
    out = io.StringIO()
    channel = ConsoleChannel(StreamScreen(out, out), lines=app.persona.lines)
    app.add_channel(channel)
    await app.gateway.start()
    return ConsoleChat(app.gateway, channel, now=app.clock.now)


async def modules_run(chat: ConsoleChat, text: str) -> collections.Counter[str]:
    """Valet module -> functions called in it while `text` is handled."""
    seen: collections.Counter[str] = collections.Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = module_of(frame.f_code.co_filename)
            if module is not None:
                seen[module] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        await chat.say(text)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return seen
