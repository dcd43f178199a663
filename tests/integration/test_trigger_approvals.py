"""A triggered run that needs the person's OK: the task waits, the person is asked on their
channel, a reply decides it and the result reaches them; or the approval expires and they are
told."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.clock import FakeClock
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, incoming
from tests.integration.test_approvals import registry_file
from triggers.model import TaskStatus
from triggers.service import Owner

EMAIL = {"to": "ana@example.com", "subject": "Weekly report", "body": "Attached."}


class PromptRecorder(RecordingSender):
    def __init__(self) -> None:
        super().__init__("test")
        self.prompts: list[str] = []

    async def send(self, message) -> str:  # type: ignore[no-untyped-def]
        self.prompts += [p.summary for p in message.prompts]
        return await super().send(message)


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()


async def scheduled_email(app_factory, tmp_path, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 9, 59, tzinfo=UTC))
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    app = await app_factory(access=access, clock=clock, agents=registry_file(tmp_path))
    sender = PromptRecorder()
    app.add_channel(sender)
    await app.start()
    alice = (await app.access.admit("test", "alice", "Alice", "hi", clock.now())).user
    task = await app.triggers.service.schedule(
        Owner(alice.id, "UTC"), name="report to Ana", schedule="2026-01-05T10:00",
        instruction="email Ana the weekly report")
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL)]))
    clock.advance(60)
    await step(app)
    return app, clock, sender, task


async def step(app) -> None:
    await app.triggers.engine.tick()
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    await app.triggers.engine.tick()  # sees what the run's turn left behind


async def test_a_triggered_run_waits_for_approval_by_reply_then_delivers_the_result(
        app_factory, tmp_path, fake_llm):
    app, clock, sender, task = await scheduled_email(app_factory, tmp_path, fake_llm)
    store = app.triggers.engine.store
    assert sender.texts() == ["Something you scheduled is ready to go and is waiting for your "
                              "OK:"]
    assert sender.prompts == ["send email (to: ana@example.com, subject: Weekly report, "
                              "body: Attached.)"]
    assert risky_tools.SENT == []
    assert (await store.get(task.id)).status is TaskStatus.PENDING_APPROVAL
    [approval] = await app.approvals.store.pending((await store.get(task.id)).user_id,
                                                   clock.now())
    assert approval.source == "trigger" and approval.trigger_task_id == task.id

    fake_llm.script(LLMReply(content="Sent the weekly report to Ana."))
    await app.gateway.receive(incoming("yes"))
    await step(app)
    assert [e["to"] for e in risky_tools.SENT] == ["ana@example.com"]
    assert sender.texts()[-1] == "Sent the weekly report to Ana."
    assert (await store.get(task.id)).status is TaskStatus.COMPLETED
    assert [r["outcome"] for r in await store.runs(task.id)] == ["done"]


async def test_an_unanswered_approval_expires_the_task_and_the_person_is_told(
        app_factory, tmp_path, fake_llm):
    app, clock, sender, task = await scheduled_email(app_factory, tmp_path, fake_llm)
    clock.advance(minutes=31)  # approvals wait 30 minutes by default
    await step(app)
    await step(app)
    store = app.triggers.engine.store
    assert (await store.get(task.id)).status is TaskStatus.EXPIRED
    assert "Your task “report to Ana” did not go ahead: the approval it needed expired." \
        in sender.texts()
    assert risky_tools.SENT == []
    assert [r["outcome"] for r in await store.runs(task.id)] == ["expired"]
    await app.gateway.receive(incoming("yes"))  # too late: nothing runs
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert risky_tools.SENT == []
