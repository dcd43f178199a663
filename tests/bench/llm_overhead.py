"""Framework overhead per LLM call, side by side with the bare client posting the same body.

An instant fake LLM on loopback answers every call. For a conversation that grows to a few
hundred messages we time, per call:
  floor   the bare `openai` client's low-level post() of the exact body the loop sent (on the
          aiohttp transport Valet's client uses);
  create  the same body through `chat.completions.create` (what a naive port would do);
  valet   one whole `react_loop` run: request view, LLM call, parsing, result.
valet - floor is what the framework adds (goal: under 1 ms, p50 and p99).
"""

from __future__ import annotations

import time

import openai
from openai.types.chat import ChatCompletion

from bot.config.policies import ReactLoopConfig
from bot.contracts.clock import SystemClock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.openai_client import OpenAILLM
from bot.loop.context import ContextManager
from bot.loop.react import react_loop
from bot.loop.state import LoopDeps
from tests.bench.size import sized
from tests.bench.stats import line, pct
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.helpers import CountingTools


def conversation(n: int) -> list[dict]:
    msgs: list[dict] = []
    i = 0
    while len(msgs) < n:
        msgs += [{"role": "user", "content": f"question {i}: what about topic {i}?"},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"c{i}", "type": "function",
                      "function": {"name": "lookup", "arguments": f'{{"topic": "t{i}"}}'}}]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": f"facts about t{i} " * 8},
                 {"role": "assistant", "content": f"Here is what I found about topic {i}."}]
        i += 1
    return msgs[:n] if msgs[n - 1]["role"] != "tool" else msgs[: n + 1]


GOAL_MS = 1.0


async def run(sizes: range | None = None, repeats: int | None = None) -> list[str]:
    sizes = sizes or range(1, sized(402, 40), 8)
    repeats = repeats or sized(5, 1)
    out = ["LLM call overhead (instant fake LLM on loopback; conversation of 1..~400 messages)"]
    async with FakeOpenAI() as fake:
        fake.responder = lambda req: Reply(content="ok", usage=(10, 1))
        llm = OpenAILLM(base_url=fake.base_url, api_key="k", model="m")
        bare = openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0,
                              http_client=openai.DefaultAioHttpClient())  # as Valet's
        cfg = ReactLoopConfig()
        deps = LoopDeps(llm, CountingTools().registry(), ContextManager(cfg), SystemClock())
        system = [{"role": "system", "content": "You are a benchmark." * 20}]
        ctx = ToolExecutionContext(user_id="bench")
        valet, floor, create, big_valet, big_floor, big_create = [], [], [], [], [], []
        big = min(200, sizes[-1])  # the long conversations (--quick: the longest there is)
        for _ in range(3):  # warm up connections and caches
            await react_loop(deps, system, conversation(5), ctx, cfg)
        for _ in range(repeats):
            for n in sizes:
                history = [*conversation(n), {"role": "user", "content": "and now?"}]
                t0 = time.perf_counter()
                await react_loop(deps, system, history, ctx, cfg)
                t1 = time.perf_counter()
                body = fake.requests[-1]
                await bare.post("/chat/completions", body=body, cast_to=ChatCompletion)
                t2 = time.perf_counter()
                await bare.chat.completions.create(**body)
                t3 = time.perf_counter()
                valet.append((t1 - t0) * 1000)
                floor.append((t2 - t1) * 1000)
                create.append((t3 - t2) * 1000)
                if n >= big:
                    big_valet.append(valet[-1])
                    big_floor.append(floor[-1])
                    big_create.append(create[-1])
                fake.requests.clear()
        overhead = [v - f for v, f in zip(valet, floor, strict=True)]
        big_overhead = [v - f for v, f in zip(big_valet, big_floor, strict=True)]
        out += [line("floor: bare client post()", floor),
                line("valet: react_loop, one LLM call", valet),
                line("valet - floor (framework overhead)", overhead),
                line("chat.completions.create (same bodies)", create),
                f"  conversations of {big}+ messages:",
                line("floor: bare client post()", big_floor),
                line("valet - floor (framework overhead)", big_overhead),
                line("chat.completions.create - floor", [c - f for c, f in
                                                          zip(big_create, big_floor, strict=True)]),
                f"  goal: valet - floor < {GOAL_MS:.0f} ms: p50 {pct(overhead, 50):.2f} ms, "
                f"p99 {pct(overhead, 99):.2f} ms "
                f"({'met' if pct(overhead, 99) < GOAL_MS else 'NOT MET'})"]
        await llm.close()
        await bare.close()
    return out
