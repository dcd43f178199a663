"""Issue 34 item 4: sub-tasks within the turn's budget. One message may start at most
`loop.subtask_max_per_turn` sub-tasks (3), `loop.subtask_concurrency` at once (2); their LLM
requests are taken from the person's rate limit; past either the model reads a tool error
saying so, and the reply says what was not done."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.config.sections import AgentsSettings
from bot.contracts.envelopes import Inbound
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)
HELPER = "You are a helper doing one sub-task"


async def start(app_factory, tmp_path, **settings):  # type: ignore[no-untyped-def]
    registry = tmp_path / "hold.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [hold]\n")
    app = await app_factory(agents=AgentsSettings(registries=[str(registry)],
                                                  answer_check="heuristic"), **settings)
    await app.ensure_owner()
    bob = await app.identities.create_user("sms", "+12125550199", display_name="Bob",
                                           default_timezone="UTC", at=NOW)
    return app, bob.id


def say(app, user: str, text: str):  # type: ignore[no-untyped-def]
    return app.orchestrator.handle_message(Inbound(user_id=user, channel="sms", text=text,
                                                   address="+12125550199", received_at=NOW))


def is_subtask(body) -> bool:  # type: ignore[no-untyped-def]
    return str(body["messages"][0]["content"]).startswith(HELPER)


def results(body) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def fifty_parts(steps: int = 1):  # type: ignore[no-untyped-def]
    """The person's turn asks for 50 sub-tasks; each sub-task takes `steps` requests."""
    def answer(body):  # type: ignore[no-untyped-def]
        if is_subtask(body):
            done = len(results(body))
            if done < steps - 1:
                return Reply(tool_calls=[ToolCall("hold", {"part": f"step {done}"})])
            return Reply(content="part done")
        if results(body):
            return Reply(content="All parts handled.")
        return Reply(tool_calls=[ToolCall("delegate", {"task": f"part {i}", "tools": ["hold"]})
                                 for i in range(50)])
    return answer


async def test_fifty_delegate_calls_in_one_message_start_three_sub_tasks(app_factory,
                                                                         fake_llm, tmp_path):
    app, bob = await start(app_factory, tmp_path)
    fake_llm.responder = fifty_parts(steps=2)
    reply = await say(app, bob, "do these 50 things")
    subtasks = [b for b in fake_llm.requests if is_subtask(b)]
    assert len(subtasks) == 3 * 2  # three sub-tasks of two steps each
    said = results(fake_llm.requests[-1])
    assert sum(r.startswith("Sub-task finished") for r in said) == 3
    refused = [r for r in said if r.startswith("Not run: at most 3 sub-tasks per request")]
    assert len(refused) == 47
    # Within the person's limit of 20 a minute: the turn, and every sub-task request.
    assert 1 + len(subtasks) <= 20 and len(fake_llm.requests) <= 20
    # The person is told, whatever the model said.
    assert reply.text.startswith("All parts handled.")
    assert "(I did 3 of the 50 parts of that at once, the most I take on for one message " \
           "is 3: ask me again for the rest.)" in reply.text


async def test_at_most_two_sub_tasks_run_at_once(app_factory, fake_llm, tmp_path):
    app, bob = await start(app_factory, tmp_path)
    fake_llm.responder = fifty_parts(steps=2)
    risky_tools.HOLD_GATE = asyncio.Event()
    try:
        turn = asyncio.create_task(say(app, bob, "do these 50 things"))
        async with asyncio.timeout(30):
            while len(risky_tools.HELD) < 2:  # noqa: ASYNC110 (a tool of this process)
                await asyncio.sleep(0.01)
        # Two sub-tasks are inside their tool; the third has not even asked the model yet.
        assert sum(is_subtask(b) for b in fake_llm.requests) == 2
        risky_tools.HOLD_GATE.set()
        await asyncio.wait_for(turn, 30)
    finally:
        risky_tools.HOLD_GATE = None
    assert sum(is_subtask(b) for b in fake_llm.requests) == 6


async def test_sub_task_requests_are_taken_from_the_persons_rate_limit(app_factory, fake_llm,
                                                                      tmp_path):
    app, bob = await start(app_factory, tmp_path, rate_limit_per_minute=5)
    fake_llm.responder = fifty_parts(steps=6)  # each sub-task would take six requests
    reply = await say(app, bob, "do these 50 things")
    subtasks = [b for b in fake_llm.requests if is_subtask(b)]
    assert len(subtasks) == 4  # the turn took one of the five; its sub-tasks the other four
    said = results(fake_llm.requests[-1])
    assert any(r.startswith("Stopped: the person's limit of 5 requests a minute was reached")
               for r in said)
    assert "Ask me again in a minute for the rest.)" in reply.text
    # ...and the limit is the same one the person's next message meets.
    assert (await say(app, bob, "and now?")).stop.value == "rate_limited"


async def test_the_owner_is_never_rate_limited_but_still_starts_three(app_factory, fake_llm,
                                                                      tmp_path):
    app, _ = await start(app_factory, tmp_path, rate_limit_per_minute=2,
                         loop={"subtask_max_per_turn": 3})
    owner = (await app.ensure_owner()).id
    fake_llm.responder = fifty_parts(steps=3)
    await say(app, owner, "do these 50 things")
    assert sum(is_subtask(b) for b in fake_llm.requests) == 9


@pytest.mark.parametrize("limit", [1, 5])
async def test_the_limits_are_settings(app_factory, fake_llm, tmp_path, limit):
    app, bob = await start(app_factory, tmp_path,
                           loop={"subtask_max_per_turn": limit})
    fake_llm.responder = fifty_parts()
    await say(app, bob, "do these 50 things")
    assert sum(is_subtask(b) for b in fake_llm.requests) == limit
