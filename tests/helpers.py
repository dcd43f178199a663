"""Small builders the tests share."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from bot.clock import FakeClock
from bot.context import ContextManager
from bot.llm import LLM
from bot.loop import LoopDeps, ReactLoopConfig, ReactLoopResult, react_loop
from bot.tools import ToolExecutionContext, ToolRegistry, tool


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
