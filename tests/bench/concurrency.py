"""Three tools of 1 s, 2 s and 3 s in one LLM turn: the turn's wall time. Floor: the longest
tool (3 s); goal: within 10% of it (serial would be 6 s)."""

from __future__ import annotations

import time

from bot.config.policies import ReactLoopConfig
from bot.contracts.clock import SystemClock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.openai_client import OpenAILLM
from bot.loop.context import ContextManager
from bot.loop.react import react_loop
from bot.loop.state import LoopDeps
from tests.bench.size import sized
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.helpers import CountingTools

UNIT = sized(10, 1) / 10  # seconds of the shortest tool (--quick: a tenth)


async def run() -> list[str]:
    async with FakeOpenAI() as fake:
        fake.script(Reply(tool_calls=[ToolCall("sleepy", {"seconds": s * UNIT})
                                      for s in (1, 2, 3)]),
                    Reply(content="rested"))
        llm = OpenAILLM(base_url=fake.base_url, api_key="k", model="m")
        cfg = ReactLoopConfig()
        deps = LoopDeps(llm, CountingTools().registry(), ContextManager(cfg), SystemClock())
        t0 = time.perf_counter()
        result = await react_loop(deps, [], [{"role": "user", "content": "go"}],
                                  ToolExecutionContext(user_id="bench"), cfg)
        wall = time.perf_counter() - t0
        await llm.close()
    floor = 3 * UNIT
    return [f"Concurrent tools ({UNIT:g} s + {2 * UNIT:g} s + {3 * UNIT:g} s in one turn; serial "
            f"would be {6 * UNIT:g} s)",
            f"  turn wall time {wall:.3f} s   tool durations "
            f"{[r.duration_ms for r in result.tool_calls]} ms   floor {floor:g} s (the longest "
            f"tool); goal <= {floor * 1.1:.2f} s: {'met' if wall <= floor * 1.1 else 'NOT MET'}"]
