"""The person first: background LLM work (memory extraction, summaries: whatever runs inside
bot.llm.caps.background_work) never delays a turn.

The gateway says when a person's turn is due (a message arrived) and when their turns are
done. A background request waits while any turn is running or due; on a one-slot server
(`llm.concurrency` 1, or llama.cpp's /props saying `total_slots: 1`) it also waits for the
conversations to have been quiet `llm.background_quiet_seconds` (a turn that follows soon
finds the server's prompt cache still holding its conversation, not the extraction's
prompt), and a request already running is cancelled the moment a person's message arrives
(its connection closed: llama.cpp stops generating) and made again at the next quiet.
Several slots: a background request runs beside turns, so it only waits for none to be due.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bot.llm.caps import in_background
from bot.llm.port import LLM, LLMResponse, Message, TextSink, WrappedLLM

log = logging.getLogger(__name__)

T = TypeVar("T")


class PersonFirst:
    """The turns running or due, and the background requests that give way to them."""

    def __init__(self, *, concurrency: int | None = None, quiet_seconds: float = 0.0) -> None:
        self.concurrency = concurrency  # None: unknown (taken as several)
        self.quiet_seconds = quiet_seconds
        self._due: set[str] = set()  # the people whose turn runs or waits
        self._quiet_since = 0.0  # loop time the last turn ended
        self._changed: asyncio.Event | None = None
        self._running: set[asyncio.Task[Any]] = set()
        self._preempting: set[asyncio.Task[Any]] = set()
        self.preempted = 0  # background requests cancelled for a person (tests, /metrics)

    @property
    def one_slot(self) -> bool:
        return self.concurrency == 1

    def turn_due(self, who: str) -> None:
        """A message of `who` arrived (its turn runs now or soon)."""
        self._due.add(who)
        self._wake()
        if self.one_slot:
            for task in self._running - self._preempting:
                log.info("a person's message arrived: the background LLM request gives way")
                self._preempting.add(task)
                task.cancel()

    def turn_done(self, who: str) -> None:
        """Nothing of `who` is left to run."""
        self._due.discard(who)
        if not self._due:
            self._quiet_since = asyncio.get_running_loop().time()
        self._wake()

    def busy(self) -> bool:
        return bool(self._due)

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def _changes(self, timeout: float | None) -> None:
        if self._changed is None:
            self._changed = asyncio.Event()
        self._changed.clear()
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            pass

    async def free(self) -> None:
        """Until no turn runs or is due (and, on one slot, the quiet period has passed)."""
        loop = asyncio.get_running_loop()
        while True:
            if self._due:
                await self._changes(None)
                continue
            left = self._quiet_since + self.quiet_seconds - loop.time() \
                if self.one_slot else 0.0
            if left <= 0:
                return
            await self._changes(left)

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work()` when no turn needs the server; made again (at the next quiet) when a
        person's message cancelled it."""
        while True:
            await self.free()
            task = asyncio.ensure_future(work())
            self._running.add(task)
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                if task not in self._preempting:  # our caller was cancelled: so is the work
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    raise
                self.preempted += 1
                await asyncio.gather(task, return_exceptions=True)
            finally:
                self._running.discard(task)
                self._preempting.discard(task)


class PersonFirstLLM(WrappedLLM):
    """Any `LLM`: its background requests (bot.llm.caps.background_work) go through the
    gate; a turn's pass straight through."""

    def __init__(self, inner: LLM, gate: PersonFirst) -> None:
        super().__init__(inner)
        self.gate = gate

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                       on_text: TextSink | None = None) -> LLMResponse:
        if not in_background():
            return await self.inner.complete(messages, tools, on_text=on_text)
        return await self.gate.run(
            lambda: self.inner.complete(messages, tools, on_text=on_text))
