"""Three tools of 1 s, 2 s and 3 s in one LLM turn: the turn's wall time (bound: 3 s)."""

from __future__ import annotations

import time

from bot.config.policies import ReactLoopConfig
from bot.contracts.clock import SystemClock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.openai_client import OpenAILLM
from bot.loop.context import ContextManager
from bot.loop.react import LoopDeps, react_loop
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.helpers import CountingTools


async def run() -> list[str]:
    async with FakeOpenAI() as fake:
        fake.script(Reply(tool_calls=[ToolCall("sleepy", {"seconds": s}) for s in (1, 2, 3)]),
                    Reply(content="rested"))
        llm = OpenAILLM(base_url=fake.base_url, api_key="k", model="m")
        cfg = ReactLoopConfig()
        deps = LoopDeps(llm, CountingTools().registry(), ContextManager(cfg), SystemClock())
        t0 = time.perf_counter()
        result = await react_loop(deps, [], [{"role": "user", "content": "go"}],
                                  ToolExecutionContext(user_id="bench"), cfg)
        wall = time.perf_counter() - t0
        await llm.close()
    return ["Concurrent tools (1 s + 2 s + 3 s in one turn; serial would be 6 s)",
            f"  turn wall time {wall:.3f} s   tool durations "
            f"{[r.duration_ms for r in result.tool_calls]} ms   (bound 3 s)"]
