"""Mid-turn messages: "actually, make it Tuesday" sent while the turn runs joins that turn
before its next LLM call (gateway.mid_turn: steer); commands and answers to approvals wait for
a turn of their own; `queue` keeps every message in a turn of its own."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import AgentsSettings, GatewaySettings
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall
from tests.helpers import RecordingSender, incoming, said

MONDAY, TUESDAY = "book the table for Monday", "actually make it Tuesday"


@pytest.fixture(autouse=True)
def _clean():  # type: ignore[no-untyped-def]
    risky_tools.SENT.clear()


async def start(app_factory, tmp_path: Path, **overrides):  # type: ignore[no-untyped-def]
    hold, log = tmp_path / "hold", tmp_path / "actions.jsonl"
    registry = tmp_path / "bank.yaml"
    settings = json.dumps({"log": str(log), "hold": str(hold)})
    registry.write_text(
        "tools:\n"
        f"  - module: tests.fakes.risky_tools\n    only: [slow_balance]\n"
        f"    safe_to_repeat: true\n    settings: {settings}\n"
        "  - module: tests.fakes.risky_tools\n    only: [send_email]\n    approval: always\n")
    app = await app_factory(
        agents=AgentsSettings(registries=[str(registry)], answer_check="heuristic"),
        access=AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                               allow=["alice"])}),
        **overrides)
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.start()
    return app, sender, hold, log


async def until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(400):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def people_said(request) -> list[str]:  # type: ignore[no-untyped-def]
    return [said(m["content"]) for m in request["messages"] if m["role"] == "user"]


async def while_the_tool_runs(app, fake_llm, hold, log, *later: str,  # type: ignore[no-untyped-def]
                              first: str = MONDAY) -> list[str]:
    """`first` starts a turn whose tool waits; `later` arrive while it does; then it ends.
    What the gateway said of each of `later`."""
    hold.touch()
    await app.gateway.receive(incoming(first, address="alice"))
    await until(lambda: log.exists() and "balance" in log.read_text(), "the tool started")
    results = [(await app.gateway.receive(incoming(text, address="alice"))).value
               for text in later]
    hold.unlink()
    await asyncio.wait_for(app.gateway.wait_idle(), 20)
    return results


async def test_a_message_sent_while_the_tool_runs_joins_the_turn(app_factory, fake_llm,
                                                                 tmp_path):
    app, sender, hold, log = await start(app_factory, tmp_path)
    fake_llm.script(Reply(tool_calls=[ToolCall("slow_balance", {"account": "dining"})]),
                    Reply(content="Booked for Tuesday."))
    assert await while_the_tool_runs(app, fake_llm, hold, log, TUESDAY) == ["joined"]
    assert sender.texts() == ["Booked for Tuesday."]  # one answer, that accounts for it
    assert await app.db.fetchval("SELECT COUNT(*) FROM inbox WHERE status = 'steered'") == 1
    assert fake_llm.calls == 2
    second = fake_llm.requests[1]["messages"]
    assert [m["role"] for m in second[1:]] == ["user", "assistant", "tool", "user"]
    assert people_said(fake_llm.requests[1]) == [MONDAY, TUESDAY]
    user = await app.identities.resolve("test", "alice")
    stored = await app.history.load(user.id)
    assert [(m["role"], m["content"]) for m in stored if m["role"] == "user"] == [
        ("user", MONDAY), ("user", TUESDAY)]  # once each, in order
    rows = await app.db.fetch("SELECT id, status, steered_into FROM inbox ORDER BY id")
    assert [(r["status"], r["steered_into"]) for r in rows] == [
        ("done", None), ("steered", f"inbox-{rows[0]['id']}")]
    debug_trace = await app.orchestrator.deps.traces.last(user.id)
    assert {"kind": "steered", "step": 2, "text": TUESDAY} in debug_trace.entries


async def test_with_mid_turn_queue_it_waits_for_a_turn_of_its_own(app_factory, fake_llm,
                                                                  tmp_path):
    app, sender, hold, log = await start(app_factory, tmp_path,
                                         gateway=GatewaySettings(mid_turn="queue"))
    fake_llm.script(Reply(tool_calls=[ToolCall("slow_balance", {"account": "dining"})]),
                    Reply(content="Booked for Monday."), Reply(content="Moved to Tuesday."))
    assert await while_the_tool_runs(app, fake_llm, hold, log, TUESDAY) == ["accepted"]
    assert sender.texts() == ["Booked for Monday.", "Moved to Tuesday."]
    assert people_said(fake_llm.requests[1]) == [MONDAY]


async def test_commands_and_answers_to_approvals_wait_for_their_own_turn(app_factory,
                                                                          fake_llm, tmp_path):
    app, sender, hold, log = await start(app_factory, tmp_path)
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {"to": "team@corp.example",
                                                              "subject": "Q3"})]))
    await app.gateway.receive(incoming("email the team about Q3", address="alice"))
    await asyncio.wait_for(app.gateway.wait_idle(), 20)
    assert risky_tools.SENT == []  # waits for the OK
    fake_llm.script(Reply(tool_calls=[ToolCall("slow_balance", {"account": "dining"})]),
                    Reply(content="120 in dining."),
                    Reply(content="Sent the Q3 email."))
    balance = "how much is left in dining?"
    assert await while_the_tool_runs(app, fake_llm, hold, log, "yes", "/pending",
                                     first=balance) == ["accepted", "accepted"]
    assert people_said(fake_llm.requests[2]) == ["email the team about Q3", balance]
    assert len(risky_tools.SENT) == 1  # "yes" was decided by the approvals step, once
    texts = sender.texts()
    # The balance question was no answer: its answer ends with what still waits (issue 43).
    assert texts[-3:] == ["120 in dining.\n\nStill waiting for your OK: send email (to: "
                          "team@corp.example, subject: Q3). Reply YES or NO.",
                          "Sent the Q3 email.",
                          "Nothing is waiting for your approval or your answer."]


async def test_a_message_arriving_during_the_last_llm_call_gets_its_own_turn(
        app_factory, fake_llm, tmp_path):
    app, sender, _, _ = await start(app_factory, tmp_path)
    fake_llm.script(Reply(content="Booked for Monday.", delay=0.5),
                    Reply(content="Moved to Tuesday."))
    await app.gateway.receive(incoming(MONDAY, address="alice"))
    await until(lambda: fake_llm.calls == 1, "the turn's only LLM call")
    await app.gateway.receive(incoming(TUESDAY, address="alice"))
    await asyncio.wait_for(app.gateway.wait_idle(), 20)
    assert sender.texts() == ["Booked for Monday.", "Moved to Tuesday."]  # never lost
    assert people_said(fake_llm.requests[1])[-1] == TUESDAY
    rows = await app.db.fetch("SELECT status FROM inbox ORDER BY id")
    assert [r["status"] for r in rows] == ["done", "done"]
