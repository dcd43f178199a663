"""The event-loop stall monitor: says when something holds the event loop, and what it was.

Every user's turn and every delivery share one event loop, so anything that runs long without
awaiting (a parser, a big regex, a blocking call) freezes them all. A heartbeat coroutine
notes when it should next run; a watchdog thread looks at that every few milliseconds. When
the loop is late by more than the threshold, the watchdog logs a warning with the task that
holds it and its stack (taken from the loop's thread while the stall lasts), and when the
loop comes back the heartbeat logs how long the stall was and keeps a `Stall` record.

C code that holds the GIL blocks the watchdog too: then the stack is taken as soon as the GIL
is free, and the duration is still exact.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass

from bot.plumbing.background import cancel_and_wait

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stall:
    duration_ms: int
    running: str  # the task that held the loop (name and coroutine), or "(callback)"
    stack: str  # where the loop's thread was when the stall was noticed


@dataclass
class _Sighting:
    running: str
    stack: str
    where: str = "(not seen)"  # the innermost frames, on one line


class StallMonitor:
    def __init__(self, threshold_seconds: float = 0.25, *, keep: int = 50) -> None:
        self.threshold = threshold_seconds
        self.interval = min(0.05, threshold_seconds / 4)
        self.stalls: deque[Stall] = deque(maxlen=keep)
        self._due = 0.0  # when the heartbeat should run next (time.monotonic)
        self._seen: _Sighting | None = None  # what the watchdog saw during the current stall
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: asyncio.Task[None] | None = None
        self._watchdog: threading.Thread | None = None

    def start(self) -> None:
        """Start watching the running event loop."""
        loop = asyncio.get_running_loop()
        self._due = time.monotonic() + self.interval
        self._stop.clear()
        self._heartbeat = loop.create_task(self._beat(), name="stall-monitor")
        self._watchdog = threading.Thread(
            target=self._watch, args=(loop, threading.get_ident()), daemon=True,
            name="stall-watchdog")
        self._watchdog.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            await cancel_and_wait(self._heartbeat)
        if self._watchdog is not None:
            await asyncio.to_thread(self._watchdog.join, 1.0)

    async def _beat(self) -> None:
        while True:
            with self._lock:
                self._due = time.monotonic() + self.interval
            await asyncio.sleep(self.interval)
            now = time.monotonic()
            with self._lock:
                late, seen, self._seen = now - self._due, self._seen, None
            if late > self.threshold:
                self._record(late, seen)

    def _record(self, late: float, seen: _Sighting | None) -> None:
        seen = seen or _Sighting("(not seen: the stall ended before the watchdog looked)", "")
        stall = Stall(int(late * 1000), seen.running, seen.stack)
        self.stalls.append(stall)
        log.warning("event loop stalled for %d ms (threshold %d ms); running: %s",
                    stall.duration_ms, int(self.threshold * 1000), stall.running)

    def _watch(self, loop: asyncio.AbstractEventLoop, loop_thread: int) -> None:
        while not self._stop.wait(self.interval / 2):
            with self._lock:
                late = time.monotonic() - self._due
                if late <= self.threshold or self._seen is not None:
                    continue
                self._seen = seen = _look(loop, loop_thread)
            # One line a person reads in `valet logs`: where the loop is, innermost first;
            # the whole stack at DEBUG (and in the Stall record).
            log.warning("event loop blocked for %d ms so far; running: %s; at %s",
                        int(late * 1000), seen.running, seen.where)
            log.debug("event loop blocked: the loop thread's stack (most recent call "
                      "last):\n%s", seen.stack)


def _look(loop: asyncio.AbstractEventLoop, loop_thread: int) -> _Sighting:
    """The task holding the loop and the loop thread's stack, seen from another thread."""
    task = asyncio.current_task(loop)
    if task is None:
        running = "(a callback, not a task)"
    else:
        running = f"task {task.get_name()!r} running {task.get_coro()!r}"
    frame = sys._current_frames().get(loop_thread)
    if frame is None:
        return _Sighting(running, "")
    frames = traceback.extract_stack(frame, limit=12)
    return _Sighting(running, "".join(traceback.format_list(frames)), where(frames))


WHERE_FRAMES = 4  # how many of the innermost frames the one-line warning names


def where(frames: traceback.StackSummary) -> str:
    """`file.py:12 in parse < file.py:40 in handle`: the innermost frames first, each as its
    file's name, line and function, the asyncio machinery below them left out."""
    own = [f for f in frames if "/asyncio/" not in f.filename and "/selectors" not in
           f.filename] or list(frames)
    shown = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}"
             for f in reversed(own[-WHERE_FRAMES:])]
    return " < ".join(shown) or "(no frame)"
