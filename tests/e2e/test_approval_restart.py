"""Kill -9 after the approval prompt went out; restart; approve: the action runs exactly once
and the conversation continues."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from bot.approvals.store import INTERRUPTED
from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.fakes.fake_openai import Reply, ToolCall


async def test_approve_after_a_crash_runs_the_action_exactly_once(fake_llm, tmp_path):
    log = tmp_path / "actions.jsonl"
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        f"    approval: always\n    settings: {{log: {log}}}\n")
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_AGENTS_FILES=str(registry))
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {
        "to": "team@corp.example", "subject": "Q3"})]))
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(b"email the team about Q3\n")
    await first.stdin.drain()
    shown = [await asyncio.wait_for(first.stdout.readline(), 30) for _ in range(2)]
    assert shown[0] == b"Before I go ahead, I need your OK:\n"
    assert b"send email (to: team@corp.example, subject: Q3)" in shown[1]
    first.send_signal(signal.SIGKILL)  # the prompt is out; nobody has answered yet
    await first.wait()
    assert not log.exists()

    fake_llm.script(Reply(content="Sent. Anything else?"))
    code, out, err = await run_valet(["chat", "--pipe"], env, "yes\n")
    assert code == 0, err
    assert out == "Sent. Anything else?\n"
    results = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[-1].startswith("Email sent to team@corp.example")

    # Answering again, or restarting again, runs nothing more.
    fake_llm.script(Reply(content="There's nothing waiting for your OK."))
    code, out, _ = await run_valet(["chat", "--pipe"], env, "yes\n")
    assert out == "There's nothing waiting for your OK.\n"
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(sent) == 1 and sent[0]["to"] == "team@corp.example"

    code, out, _ = await run_valet(["approvals", "list"], env)
    assert code == 0 and "executed" in out and "send email" in out


def _logged(path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["kind"] for line in path.read_text().splitlines()]


async def test_kill_during_an_approved_action_is_told_as_unknown_and_never_runs_again(
        fake_llm, tmp_path):
    log = tmp_path / "actions.jsonl"
    registry = tmp_path / "money.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [transfer_money]\n"
                        f"    approval: always\n    settings: {{log: {log}, hold_seconds: 60}}\n")
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_AGENTS_FILES=str(registry))
    fake_llm.script(Reply(tool_calls=[ToolCall("transfer_money", {"to": "bob", "amount": 5})]))
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(b"send bob 5\n")
    await first.stdin.drain()
    shown = [await asyncio.wait_for(first.stdout.readline(), 30) for _ in range(2)]
    assert b"transfer money (to: bob, amount: 5)" in shown[1]
    first.stdin.write(b"yes\n")
    await first.stdin.drain()
    for _ in range(600):  # the approved transfer is under way...
        if _logged(log):
            break
        await asyncio.sleep(0.05)
    assert _logged(log) == ["transfer-started"]
    first.send_signal(signal.SIGKILL)  # ...and the process dies in the middle of it
    await first.wait()

    # The restart settles it before any turn runs: outcome unknown, told with what to check
    # and the same transfer offered again as a new card. The "yes" the crash cut short is
    # redone and reaches the LLM with the call's real outcome, and never answers the new
    # card (it came before it); a later "no" declines the offer: nothing runs again.
    fake_llm.script(Reply(content="The transfer was interrupted; check your bank first."),
                    Reply(content="OK, I won't send it again."))
    code, out, err = await run_valet(["chat", "--pipe"], env, "no\n")
    assert code == 0, err
    said = out.splitlines()
    assert said[0] == ("“transfer money (to: bob, amount: 5)” was interrupted: it may or may "
                       "not have happened. Check before you approve it again.")
    assert "1. transfer money (to: bob, amount: 5)" in out  # the offer, as a card
    assert said[-2:] == ["The transfer was interrupted; check your bank first.",
                         "OK, I won't send it again."]
    redone = [m["content"] for m in fake_llm.requests[-2]["messages"] if m["role"] == "tool"]
    assert redone[-1] == INTERRUPTED
    assert _logged(log) == ["transfer-started"]  # never started again, never completed

    code, out, _ = await run_valet(["approvals", "list"], env)
    assert code == 0 and "outcome unknown" in out and "transfer money" in out
    assert "rejected" in out  # the offer, declined
    code, out, _ = await run_valet(["chat", "--pipe"], env, "")  # a third start: told once
    assert code == 0 and out == ""
