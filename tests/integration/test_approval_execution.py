"""Running an approved action is one public step whose outcome is a value: what happened, and
what the conversation hears of it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.contracts.approvals import ApprovalStatus, ExecutionStatus
from bot.contracts.envelopes import Inbound
from tests.fakes import risky_tools
from tests.helpers import requests_of
from tests.integration.test_approvals import ask_for_email, start


@pytest.fixture(autouse=True)
def _clean():  # type: ignore[no-untyped-def]
    risky_tools.SENT.clear()


async def approved_email(app, me, fake_llm):  # type: ignore[no-untyped-def]
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    assert await app.approvals.store.decide(approval.id, ApprovalStatus.APPROVED, by="test",
                                            at=app.clock.now())
    ctx = await app.orchestrator.prepare_context(Inbound(
        user_id=me, channel="console", text="yes", address="local",
        received_at=datetime(2026, 1, 5, 9, tzinfo=UTC)))
    return approval, ctx


async def test_an_approved_action_runs_once_and_says_so(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    approval, ctx = await approved_email(app, me, fake_llm)
    ran = await app.approvals.execute(ctx, approval)
    assert ran.status is ExecutionStatus.EXECUTED
    assert ran.content.startswith("Email sent to team@corp.example")
    again = await app.approvals.execute(ctx, approval)
    assert again.status is ExecutionStatus.ALREADY_HANDLED
    assert again.content == "Not run: this action was already handled."
    assert len(risky_tools.SENT) == 1
    stored = await app.approvals.store.get(approval.id)
    assert stored.status is ApprovalStatus.EXECUTED


async def test_changed_arguments_are_refused_and_recorded_as_refused(app_factory, fake_llm,
                                                                     tmp_path):
    app, me = await start(app_factory, tmp_path)
    approval, ctx = await approved_email(app, me, fake_llm)
    tampered = replace(approval, arguments={**approval.arguments, "to": "boss@corp.example"})
    ran = await app.approvals.execute(ctx, tampered)
    assert ran.status is ExecutionStatus.REFUSED
    assert ran.content == "Not run: its arguments changed after they were approved."
    assert risky_tools.SENT == []
    stored = await app.approvals.store.get(approval.id)
    assert stored.status is ApprovalStatus.REFUSED and stored.result.startswith("refused:")
