"""How much of each turn's prompt a llama.cpp-like server reads from its prompt cache: one
conversation of several turns, a minute apart, each turn's capability opened by the router or
by the model, against the fake llama.cpp server (tests/fakes/fake_llamacpp.py: one slot, a
Hermes/Qwen2.5-style template with the tools in the system block, `timings.cache_n` from the
prefix its slot shares with the request; Valet reads it as
`usage.prompt_tokens_details.cached_tokens`).

Printed per turn: the prompt tokens of its requests, those read from the cache, and the share;
then the whole conversation's. The floor is the tokens no cache can save: each request's new
messages (what the previous request and its answer did not hold). Goal: after the first turn,
at least 80% of the conversation's prompt tokens come from the cache. (A turn that opens a
capability adds tools, which llama.cpp renders ahead of the history: that turn reads the
history again; `tool_exposure: all` offers every tool from the first turn instead.)

Runs on any commit with the same App API (the before/after numbers in the note of [realmodel]
were taken by running this file on the branch's base).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.config import load_settings
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from tests.fakes.fake_llamacpp import FakeLlamaCpp, Said, common_prefix, render, tokens

GOAL_SHARE = 0.80
START = datetime(2026, 12, 2, 14, 31, tzinfo=UTC)
# (what the person says, the tool the answer needs, its arguments, the answer)
TURNS: list[tuple[str, str | None, dict[str, Any], str]] = [
    ("hi", None, {}, "Hello! What can I do for you?"),
    ("what is six times seven", "calculate", {"expression": "6*7"}, "6 × 7 = 42."),
    ("what notes do I have?", "list_notes", {}, "You have no notes yet."),
    ("what time is it in Tokyo?", "current_time", {"timezone": "Asia/Tokyo"},
     "It is 23:35 in Tokyo."),
    ("and what is 12 times 12", "calculate", {"expression": "12*12"}, "144."),
    ("thanks!", None, {}, "You're welcome!"),
]


def model(body: dict[str, Any]) -> Said:
    """Calls the tool the newest message needs once it is offered (else opens a capability
    that may hold it), answers once its result is in."""
    messages = body["messages"]
    said = next(str(m.get("content") or "") for m in reversed(messages)
                if m["role"] == "user")
    turn = next((t for t in TURNS if said.startswith(t[0])), TURNS[-1])
    _, tool, arguments, answer = turn
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    if tool is None or (messages[-1]["role"] == "tool" and tool in _called(messages)):
        return Said(answer)
    if tool in offered:
        return Said(calls=[(tool, arguments)])
    if "open_capability" in offered:
        group = {"calculate": "time", "current_time": "time", "list_notes": "notes"}[tool]
        return Said(calls=[("open_capability", {"name": group})])
    return Said(answer)


def _called(messages: list[dict[str, Any]]) -> set[str]:
    return {c["function"]["name"] for m in messages[-4:] for c in m.get("tool_calls") or ()}


async def conversation() -> list[tuple[int, int, int]]:
    """Per turn: (prompt tokens, of them from the cache, the floor)."""
    from bot.app import App

    found = []
    with tempfile.TemporaryDirectory() as folder:
        async with FakeLlamaCpp(slots=1, jinja_tools=True, token_seconds=0) as server:
            server.model = model
            config = Path(folder) / "valet.yaml"
            config.write_text("memory:\n  enabled: false\n")
            settings = load_settings(str(config), env={
                "VALET_DATABASE_URL": f"sqlite:///{folder}/bench.db",
                "VALET_LLM_BASE_URL": server.base_url, "VALET_LLM_MODEL": "smollm2",
                "VALET_LLM_API_KEY": "k"})
            clock = FakeClock(START)
            app = await App.build(settings, clock=clock)
            try:
                owner = await app.ensure_owner()
                previous: list[str] = []
                for text, *_ in TURNS:
                    first = len(server.requests)
                    await app.orchestrator.handle_message(Inbound(
                        user_id=owner.id, channel="console", text=text,
                        received_at=clock.now()))
                    prompt = cached = floor = 0
                    for body, answer in zip(server.requests[first:], server.answers[first:],
                                            strict=True):
                        if answer.get("status") != 200:
                            continue
                        mine = tokens(render(body))
                        prompt += len(mine)
                        cached += answer["cache_n"]
                        floor += len(mine) - common_prefix(previous, mine)
                        previous = mine
                    found.append((prompt, cached, floor))
                    clock.advance(minutes=1)
            finally:
                await app.close()
    return found


async def run() -> list[str]:
    turns = await conversation()
    lines = ["prompt cache (fake llama.cpp, one conversation, a turn a minute):"]
    for (text, *_), (prompt, cached, floor) in zip(TURNS, turns, strict=True):
        share = cached / prompt if prompt else 0.0
        lines.append(f"  {text[:28]:<28} {prompt:>6} prompt tokens, {cached:>6} from the "
                     f"cache ({share:.0%}); floor: {floor} new")
    prompt = sum(t[0] for t in turns[1:])
    cached = sum(t[1] for t in turns[1:])
    share = cached / prompt if prompt else 0.0
    worst = min(t[1] / t[0] for t in turns[1:] if t[0])
    verdict = "ok" if share >= GOAL_SHARE else "BELOW GOAL"
    lines.append(f"  after the first turn: {cached} of {prompt} prompt tokens from the cache "
                 f"({share:.0%}, goal >= {GOAL_SHARE:.0%}: {verdict}); worst turn {worst:.0%}")
    return lines


if __name__ == "__main__":
    import asyncio

    print("\n".join(asyncio.run(run())))
