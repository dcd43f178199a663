"""Background LLM work gives way to a person's turn (bot.llm.person_first)."""

from __future__ import annotations

import asyncio

from bot.llm.caps import background_work
from bot.llm.openai_client import OpenAILLM
from bot.llm.person_first import PersonFirst, PersonFirstLLM
from tests.fakes.fake_openai import Reply
from tests.helpers import until


async def test_background_requests_wait_while_a_turn_is_due_and_turns_never_wait(fake_llm):
    gate = PersonFirst(concurrency=4)
    inner = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m")
    llm = PersonFirstLLM(inner, gate)
    fake_llm.responder = lambda body: Reply(content=body["messages"][-1]["content"])
    try:
        gate.turn_due("alice")

        async def extraction() -> str | None:
            with background_work():
                return (await llm.complete([{"role": "user", "content": "bg"}], None)).content

        waiting = asyncio.create_task(extraction())
        answer = await llm.complete([{"role": "user", "content": "turn"}], None)
        assert answer.content == "turn" and not waiting.done()
        assert fake_llm.calls == 1  # the background request was not sent
        gate.turn_done("alice")
        assert await asyncio.wait_for(waiting, 10) == "bg"
    finally:
        await inner.close()


async def test_on_one_slot_background_work_waits_for_the_quiet_period_then_runs(fake_llm):
    gate = PersonFirst(concurrency=1, quiet_seconds=0.2)
    inner = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m")
    llm = PersonFirstLLM(inner, gate)
    fake_llm.responder = lambda body: Reply(content="ok")
    try:
        gate.turn_due("alice")
        gate.turn_done("alice")  # the turn just ended: quiet from now

        async def extraction() -> None:
            with background_work():
                await llm.complete([{"role": "user", "content": "bg"}], None)

        waiting = asyncio.create_task(extraction())
        await asyncio.sleep(0)
        assert fake_llm.calls == 0
        await asyncio.wait_for(waiting, 10)
        await until(lambda: fake_llm.calls == 1, "the background request after the quiet")
    finally:
        await inner.close()
