"""Kill -9 in the middle of a turn after a tool did something; restart: the turn continues
from its journal. A side effect is never repeated; a read-only call may simply run again."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import sys
from collections.abc import Callable

from bot.loop.journal import INTERRUPTED
from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.fakes.fake_openai import FakeOpenAI, Hang, Reply, ToolCall


async def start_then_kill(env: dict[str, str], text: str, ready: Callable[[], bool]) -> None:
    """A `valet chat --pipe` that gets `text`, runs until `ready()`, and is killed -9."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(text.encode() + b"\n")
    await proc.stdin.drain()
    for _ in range(600):
        if ready():
            break
        await asyncio.sleep(0.05)
    assert ready(), "the turn never got that far"
    proc.send_signal(signal.SIGKILL)
    await proc.wait()


def tool_results(fake_llm: FakeOpenAI) -> list[str]:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def test_a_note_saved_before_a_crash_is_saved_once_after_restart(fake_llm, tmp_path):
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m")
    fake_llm.script(
        Reply(tool_calls=[ToolCall("take_note", {"title": "Trip",
                                                 "body": "passport, charger"})]),
        Hang(60))  # the note is saved; the LLM is thinking about the reply: kill -9 now
    await start_then_kill(env, "note for the trip: passport, charger",
                          lambda: fake_llm.calls == 2)
    db = sqlite3.connect(tmp_path / "valet.db")
    assert db.execute("SELECT COUNT(*) FROM notes").fetchone() == (1,)

    fake_llm.script(Reply(content="Saved your trip note."))
    code, out, err = await run_valet(["chat", "--pipe"], env)
    assert code == 0, err
    assert out == "Saved your trip note.\n"  # one reply
    assert db.execute("SELECT title, body FROM notes").fetchall() == [
        ("Trip", "passport, charger")]  # saved once
    assert fake_llm.calls == 3  # the first answer came from the journal
    assert tool_results(fake_llm)[0].startswith("Saved note #1")
    roles = [r for (r,) in db.execute("SELECT role FROM messages ORDER BY seq")]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert db.execute("SELECT COUNT(*) FROM turn_journal").fetchone() == (0,)

    code, out, _ = await run_valet(["chat", "--pipe"], env)  # nothing left to do
    assert out == "" and fake_llm.calls == 3


async def test_calls_cut_short_by_a_crash_repeat_only_if_safe(fake_llm, tmp_path):
    log, hold = tmp_path / "actions.jsonl", tmp_path / "hold"
    hold.touch()  # the tools wait while this exists
    registry = tmp_path / "bank.yaml"
    settings = json.dumps({"log": str(log), "hold": str(hold)})
    registry.write_text(
        "tools:\n"
        f"  - module: tests.fakes.risky_tools\n    only: [slow_transfer]\n"
        f"    settings: {settings}\n"
        f"  - module: tests.fakes.risky_tools\n    only: [slow_balance]\n"
        f"    safe_to_repeat: true\n    settings: {settings}\n")
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_AGENTS_FILES=str(registry))
    fake_llm.script(Reply(tool_calls=[ToolCall("slow_transfer", {"to": "bob", "amount": 5}),
                                      ToolCall("slow_balance", {"account": "savings"})]))

    def kinds() -> list[str]:
        return [json.loads(line)["kind"] for line in log.read_text().splitlines()] \
            if log.exists() else []

    await start_then_kill(env, "pay bob 5 and tell me my savings",
                          lambda: sorted(kinds()) == ["balance", "transfer"])

    hold.unlink()
    fake_llm.script(Reply(content="Savings hold 120. I can't tell whether bob got the 5: "
                                  "please check before I try again."))
    code, out, err = await run_valet(["chat", "--pipe"], env)
    assert code == 0, err
    assert out.startswith("Savings hold 120.") and out.count("\n") == 1
    assert sorted(kinds()) == ["balance", "balance", "transfer"]  # the transfer ran once
    assert tool_results(fake_llm) == [INTERRUPTED, "The savings account holds 120."]
    assert fake_llm.calls == 2

