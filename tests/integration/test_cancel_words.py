"""What "cancel" means depends on which steps of the turn read it (bot/turn/order.py): with an
approval pending and a task waiting, "/cancel" drops the task and leaves the approval; "cancel"
rejects the approval, and the tasks step after it drops the task as well; with only one of
them waiting, "cancel" settles that one."""

from __future__ import annotations

import pytest

from bot.contracts.approvals import ApprovalStatus
from bot.contracts.envelopes import TurnStop
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.integration.test_approvals import EMAIL, registry_file, say, tool_results

NOTE_QUESTION = "What should the note say?"


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()


async def test_cancel_reaches_the_command_then_the_approval_then_the_task(app_factory, fake_llm,
                                                                          tmp_path):
    app = await app_factory(agents=registry_file(tmp_path))
    me = (await app.ensure_owner()).id
    fake_llm.script(LLMReply(tool_calls=[ToolCall("take_note", {})]))
    assert (await say(app, me, "take a note")).text == NOTE_QUESTION
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL)]))
    await say(app, me, "send the team the Q3 numbers")
    [approval] = await app.approvals.list_pending_approvals(me)
    assert len(await app.pool.waiting(me)) == 1

    # 1. The command: "/cancel" drops the waiting task, never the approval.
    calls = fake_llm.calls
    reply = await say(app, me, "/cancel")
    assert reply.text == "Okay, I've cancelled the note." and reply.stop is TurnStop.CANCELLED
    assert await app.pool.waiting(me) == []
    assert [a.id for a in await app.approvals.list_pending_approvals(me)] == [approval.id]
    assert fake_llm.calls == calls

    # 2. The approvals: "cancel" rejects what waits for an OK; the tasks step reads the
    # same word after it and drops the waiting task too, and its line is the reply.
    fake_llm.script(LLMReply(tool_calls=[ToolCall("take_note", {})]))
    # No answer of the table: its answer ends with what still waits (issue 43).
    assert (await say(app, me, "take a note")).text == (
        f"{NOTE_QUESTION}\n\nStill waiting for your OK: {approval.summary}. Reply YES or NO.")
    calls = fake_llm.calls
    reply = await say(app, me, "cancel")
    assert reply.text == "Okay, I've cancelled the note." and reply.stop is TurnStop.CANCELLED
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.REJECTED
    assert risky_tools.SENT == [] and fake_llm.calls == calls
    assert await app.pool.waiting(me) == []

    # 3. The tasks: with no approval pending, "cancel" drops the waiting task alone.
    fake_llm.script(LLMReply(tool_calls=[ToolCall("take_note", {})]))
    assert (await say(app, me, "take a note")).text == NOTE_QUESTION
    reply = await say(app, me, "cancel")
    assert reply.text == "Okay, I've cancelled the note." and reply.stop is TurnStop.CANCELLED
    assert await app.pool.waiting(me) == []

    # 4. The approvals alone: "cancel" rejects, and the loop tells the model.
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL)]))
    await say(app, me, "send the team the Q3 numbers")
    fake_llm.script(LLMReply(content="Fine, I won't send it."))
    assert (await say(app, me, "cancel")).text == "Fine, I won't send it."
    assert tool_results(fake_llm.requests[-1])[-1] == "User cancelled this action."
    assert risky_tools.SENT == []
