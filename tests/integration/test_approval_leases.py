"""Approvals never stuck: an approved action whose process died is reported (and never run
again on its own): outcome unknown when it was running (the same action is offered again as a
new card), interrupted when it had not started; a live one keeps its lease."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.approvals.store import INTERRUPTED, NOT_STARTED
from bot.config.sections import AgentsSettings, ApprovalSettings
from bot.contracts.approvals import ApprovalStatus
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, requests_of

TRANSFER = {"to": "bob", "amount": 5}
SHOWN = "transfer money (to: bob, amount: 5)"


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.TRANSFERS_STARTED.clear()
    risky_tools.TRANSFERS_DONE.clear()
    risky_tools.TRANSFER_GATE = None
    yield
    risky_tools.TRANSFER_GATE = None


def registry(tmp_path) -> AgentsSettings:
    path = tmp_path / "money.yaml"
    path.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [transfer_money]\n"
                    "    approval: always\n")
    return AgentsSettings(registries=[str(path)], answer_check="heuristic")


async def started_app(app_factory, tmp_path, clock, **overrides):
    """An app with a console to hear notices on, started (as the service would be)."""
    app = await app_factory(clock=clock, agents=registry(tmp_path), **overrides)
    console = RecordingSender("console")
    app.add_channel(console)
    await app.start()
    return app, console


def say(app, text: str):
    return app.orchestrator.handle_message(Inbound(
        user_id="owner", channel="console", text=text, address="local",
        received_at=datetime(2026, 1, 5, 9, tzinfo=UTC)))


async def ask_for_transfer(app, fake_llm):
    fake_llm.script(LLMReply(tool_calls=[ToolCall("transfer_money", TRANSFER)]))
    [approval] = await requests_of(app, await say(app, "send bob 5"))
    return approval


def tool_results(request) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def until(condition, *, tries: int = 500) -> None:
    """Wait a bounded time for something to happen (not an assertion on speed)."""
    for _ in range(tries):
        if await condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("gave up waiting")


async def test_the_sweeper_reports_a_dead_processes_action_within_its_interval(
        postgres_dsn, app_factory, fake_llm, tmp_path):
    clock = FakeClock()
    dead = await app_factory(clock=clock, database_url=postgres_dsn, agents=registry(tmp_path))
    approval = await ask_for_transfer(dead, fake_llm)
    # That process took the yes and began the action, then died (no heartbeat any more).
    store = dead.approvals.store
    assert await store.decide(approval.id, ApprovalStatus.APPROVED, by="console:local",
                              at=clock.now())
    assert await store.begin_execution(approval.id, clock.now())

    # Another process is running on the same Postgres: at its start the lease is still
    # live (it may be a process that is merely busy), so nothing is settled yet.
    alive, console = await started_app(app_factory, tmp_path, clock,
                                       database_url=postgres_dsn)
    settings = alive.settings.approvals
    assert settings.lease_seconds + settings.sweep_seconds <= 60  # told within a minute
    clock.advance(seconds=settings.lease_seconds - 1)
    await alive.sweep_approvals()
    assert (await store.get(approval.id)).status is ApprovalStatus.EXECUTING

    clock.advance(seconds=2)  # the lease lapsed: the next sweep settles it
    await alive.sweep_approvals()
    await alive.gateway.wait_idle()
    settled = await store.get(approval.id)
    # It was running: it may have acted. Outcome unknown, never "done", never run again.
    assert (settled.status, settled.result) == (ApprovalStatus.UNKNOWN, INTERRUPTED)
    assert console.texts() == [f"“{SHOWN}” was interrupted: it may or may not have happened. "
                               "Check before you approve it again."]
    assert console.cards == [(SHOWN,)]  # the same action, offered again as a new card
    [again] = await alive.approvals.list_pending_approvals("owner")
    assert again.replaces == approval.id and again.arguments == approval.arguments
    await alive.sweep_approvals()  # told once
    await alive.gateway.wait_idle()
    assert len(console.texts()) == 1

    # Nothing ran on its own; the conversation hears what happened to the call.
    fake_llm.script(LLMReply(content="That transfer was interrupted; please check your bank."))
    reply = await say(alive, "what happened to the transfer?")
    assert reply.text == "That transfer was interrupted; please check your bank."
    assert risky_tools.TRANSFERS_STARTED == []
    assert INTERRUPTED in tool_results(fake_llm.requests[-1])[-1]


async def test_a_yes_whose_process_died_before_the_action_started_fails_visibly(
        app_factory, fake_llm, tmp_path):
    clock = FakeClock()
    dead = await app_factory(clock=clock, agents=registry(tmp_path))
    approval = await ask_for_transfer(dead, fake_llm)
    assert await dead.approvals.store.decide(approval.id, ApprovalStatus.APPROVED,
                                             by="console:local", at=clock.now())
    # ...and the process died before the action began. The restarted process owns the
    # SQLite file alone, so it settles the request at once, without waiting for the lease.
    app, console = await started_app(app_factory, tmp_path, clock)
    await app.gateway.wait_idle()
    settled = await app.approvals.store.get(approval.id)
    assert (settled.status, settled.result) == (ApprovalStatus.INTERRUPTED, NOT_STARTED)
    assert console.texts() == [f"“{SHOWN}” was interrupted before it started: nothing was "
                               "done. Ask again if you still want it."]
    assert not await app.approvals.store.begin_execution(approval.id, clock.now())
    fake_llm.script(LLMReply(content="It didn't go through; shall I try again?"))
    assert (await say(app, "yes")).text == "It didn't go through; shall I try again?"
    assert risky_tools.TRANSFERS_STARTED == []


async def test_a_long_action_that_is_alive_keeps_its_lease(app_factory, fake_llm, tmp_path):
    clock = FakeClock()
    app, console = await started_app(app_factory, tmp_path, clock,
                                     approvals=ApprovalSettings(lease_seconds=0.3))
    approval = await ask_for_transfer(app, fake_llm)
    risky_tools.TRANSFER_GATE = asyncio.Event()
    fake_llm.script(LLMReply(content="Sent bob 5."))
    answering = asyncio.create_task(say(app, "yes"))

    async def transfer_running() -> bool:
        return bool(risky_tools.TRANSFERS_STARTED)

    await until(transfer_running)
    clock.advance(seconds=60)  # long past the lease it began with...

    async def lease_renewed() -> bool:
        current = await app.approvals.store.get(approval.id)
        return current.lease_until is not None and current.lease_until > clock.now()

    await until(lease_renewed)  # ...but the heartbeat renews it
    await app.sweep_approvals()
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.EXECUTING
    risky_tools.TRANSFER_GATE.set()
    assert (await answering).text == "Sent bob 5."
    assert risky_tools.TRANSFERS_DONE == [{"to": "bob", "amount": "5"}]
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.EXECUTED
    await app.gateway.wait_idle()
    assert console.texts() == []


async def test_an_action_settled_as_interrupted_under_it_is_stopped(app_factory, fake_llm,
                                                                   tmp_path):
    """Its process was stalled past its lease and the sweeper told the user it was
    interrupted: the action must not then complete behind their back."""
    clock = FakeClock()
    app, console = await started_app(app_factory, tmp_path, clock,
                                     approvals=ApprovalSettings(lease_seconds=0.3))
    approval = await ask_for_transfer(app, fake_llm)
    risky_tools.TRANSFER_GATE = asyncio.Event()
    fake_llm.script(LLMReply(content="The transfer was interrupted."))
    answering = asyncio.create_task(say(app, "yes"))

    async def transfer_running() -> bool:
        return bool(risky_tools.TRANSFERS_STARTED)

    await until(transfer_running)
    clock.advance(seconds=60)
    await app.sweep_approvals()  # before the heartbeat's next beat: the lease has lapsed
    assert (await answering).text == "The transfer was interrupted."
    risky_tools.TRANSFER_GATE.set()
    await asyncio.sleep(0)
    assert risky_tools.TRANSFERS_DONE == []
    settled = await app.approvals.store.get(approval.id)
    assert (settled.status, settled.result) == (ApprovalStatus.UNKNOWN, INTERRUPTED)
    assert INTERRUPTED in tool_results(fake_llm.requests[-1])[-1]
    await app.gateway.wait_idle()
    # Told once (by the sweeper, with the action offered again), not again by the turn.
    assert console.texts() == [f"“{SHOWN}” was interrupted: it may or may not have happened. "
                               "Check before you approve it again."]
    assert console.cards == [(SHOWN,)]
