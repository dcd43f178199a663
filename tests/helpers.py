"""Small builders the tests share."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.channel import ChannelSender
from bot.config.policies import ReactLoopConfig
from bot.contracts.channels import ChannelTraits
from bot.contracts.clock import FakeClock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import LLM
from bot.loop.context import ContextManager
from bot.loop.react import LoopDeps, ReactLoopResult, react_loop
from bot.tools import ToolRegistry, tool


@dataclass
class CountingTools:
    """Test tools that count their calls, with a barrier that proves concurrency."""

    calls: list[str] = field(default_factory=list)
    started: dict[str, asyncio.Event] = field(default_factory=dict)

    def registry(self) -> ToolRegistry:
        counter = self

        @tool
        async def lookup(topic: str) -> str:
            """Look a topic up.

            Args:
                topic: what to look up
            """
            counter.calls.append(f"lookup:{topic}")
            return f"facts about {topic}"

        @tool
        async def wait_for_peer(me: str, peer: str) -> str:
            """Start, then finish only once the peer call has started too."""
            counter.calls.append(f"wait:{me}")
            counter.started.setdefault(me, asyncio.Event()).set()
            await counter.started.setdefault(peer, asyncio.Event()).wait()
            return f"{me} saw {peer}"

        @tool
        async def explode() -> str:
            """Always fails."""
            counter.calls.append("explode")
            raise RuntimeError("the widget broke")

        @tool
        async def sleepy(seconds: float) -> str:
            """Sleeps."""
            counter.calls.append(f"sleepy:{seconds}")
            await asyncio.sleep(seconds)
            return "rested"

        return ToolRegistry([f.__valet_tool__ for f in (lookup, wait_for_peer, explode, sleepy)])


def loop_config(**overrides: Any) -> ReactLoopConfig:
    base: dict[str, Any] = {"llm_retry_base_delay": 0.5, "turn_deadline_seconds": 20.0}
    base.update(overrides)
    return ReactLoopConfig(**base)


async def run_loop(llm: LLM, registry: ToolRegistry, text: str = "hello", *,
                   cfg: ReactLoopConfig | None = None, history: list[dict[str, Any]] | None = None,
                   clock: FakeClock | None = None, **kwargs: Any) -> ReactLoopResult:
    cfg = cfg or loop_config()
    clock = clock or FakeClock()
    deps = LoopDeps(llm, registry, ContextManager(cfg), clock)
    system = [{"role": "system", "content": "You are a test."}]
    msgs = [*(history or []), {"role": "user", "content": text}]
    ctx = ToolExecutionContext(user_id="u1", clock=clock)
    return await react_loop(deps, system, msgs, ctx, cfg, **kwargs)


def assert_closed(messages: list[dict[str, Any]]) -> None:
    """Every tool call answered exactly once, right after its assistant message."""
    open_ids: set[str] = set()
    for msg in messages:
        if msg["role"] == "tool":
            assert msg["tool_call_id"] in open_ids, f"orphan result {msg}"
            open_ids.discard(msg["tool_call_id"])
            continue
        assert not open_ids, f"unanswered calls {open_ids} before {msg}"
        for call in msg.get("tool_calls") or []:
            open_ids.add(call["id"])
    assert not open_ids, f"unanswered calls {open_ids} at the end"


class RecordingSender(ChannelSender):
    """A channel sender that records what it was asked to send; `fail` scripts failures.
    It can do nothing but send (the base's defaults: no edits, no buttons, no brevity)."""

    def __init__(self, name: str = "test", fail: list[Exception] | None = None) -> None:
        self.traits = ChannelTraits(name, name.title())
        self.sent: list[tuple[str, str]] = []
        self.cards: list[tuple[str, ...]] = []  # each message's prompts (their summaries)
        self.fail = list(fail or [])
        self.attempts = 0

    async def send(self, message) -> str:  # type: ignore[no-untyped-def]
        self.attempts += 1
        if self.fail:
            raise self.fail.pop(0)
        self.sent.append((message.address, message.text))
        self.cards.append(tuple(p.summary for p in message.prompts))
        return f"{self.name}-{len(self.sent)}"

    def texts(self, address: str | None = None) -> list[str]:
        return [t for a, t in self.sent if address is None or a == address]


def incoming(text: str, *, channel: str = "test", address: str = "alice", external_id: str = "",
             name: str = ""):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from bot.contracts.envelopes import IncomingMessage

    incoming.counter = getattr(incoming, "counter", 0) + 1  # type: ignore[attr-defined]
    return IncomingMessage(channel=channel, address=address, text=text,
                           external_id=external_id or f"ext-{incoming.counter}",  # type: ignore[attr-defined]
                           received_at=datetime(2026, 1, 5, 9, tzinfo=UTC), display_name=name)


async def requests_of(app, reply):  # type: ignore[no-untyped-def]
    """The stored approval requests behind a reply's prompts, in the order shown."""
    return [await app.approvals.store.get(p.id) for p in reply.prompts]


async def app_with_connected_owner(app_factory: Any, service: str, secret: dict[str, str], *,
                                   clock: FakeClock, timezone: str | None = None
                                   ) -> tuple[Any, str]:
    """An app whose owner has `service` (calendar, email) connected with `secret`; the
    approval-reply check is the heuristic (no extra LLM call to script). (app, owner id)."""
    from bot.config.sections import AgentsSettings

    app = await app_factory(clock=clock, agents=AgentsSettings(answer_check="heuristic"))
    me = (await app.ensure_owner()).id
    if timezone:
        await app.users.set_timezone(me, timezone)
    credentials = app.services.credentials
    await credentials.put(me, service, secret, app.clock.now())
    return app, me


def unquoted(text: str) -> str:
    """The body of the one untrusted-data block `text` ends with (bot.text.untrusted), checked to
    be well formed: the note before it, its tag matching its body."""
    import re

    from bot.text.untrusted import untrusted_tag

    match = re.search(r"Note: [^\n]*\n<<<untrusted data (\w+)>>>\n(.*)\n<<<end untrusted data "
                      r"\1>>>$", text, re.S)
    assert match is not None, f"not quoted as untrusted data: {text!r}"
    assert match.group(1) == untrusted_tag(match.group(2))
    return match.group(2)


async def until(check: Callable[[], Any], what: str, timeout: float = 30.0,
                seen: Callable[[], Awaitable[str]] | None = None) -> None:
    """Wait for a condition (a plain or an async check), generously bounded (the machine may
    be busy), polling; on failure, `seen` says what there was instead."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            shown = f"\n{await seen()}" if seen is not None else ""
            raise AssertionError(f"never happened: {what}{shown}")
        await asyncio.sleep(0.05)


def said(content: Any) -> Any:
    """A request's user message as the person wrote it: without the turn's note Valet puts
    after the newest one (the time, recalled memory: bot.turn.media)."""
    from bot.turn.media import NOTE_HEAD

    if isinstance(content, list):
        return [p for p in content if not (isinstance(p, dict)
                                           and str(p.get("text", "")).startswith(NOTE_HEAD))]
    if not isinstance(content, str) or NOTE_HEAD not in content:
        return content
    return content.split(NOTE_HEAD, 1)[0].removesuffix("\n\n")


def told(messages: list[dict[str, Any]]) -> str:
    """What a request told the model besides the conversation: its system prompt, and the
    turn's note after the person's newest words (bot.turn.media)."""
    from bot.turn.media import NOTE_HEAD

    system = str(messages[0].get("content") or "") if messages else ""
    newest = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"),
                  "")
    texts = [p.get("text", "") for p in newest if isinstance(p, dict)] \
        if isinstance(newest, list) else [str(newest or "")]
    notes = [t[t.index(NOTE_HEAD):] for t in texts if NOTE_HEAD in t]
    return "\n\n".join([system, *notes])
