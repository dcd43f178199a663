"""A message sent while a turn runs joins it; kill -9 after it joined: the redone turn adds it
at the same point, once, and it never runs as a turn of its own."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import sys

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.fakes.fake_openai import FakeOpenAI, Hang, Reply, ToolCall
from tests.helpers import said

MONDAY, TUESDAY = "book the table for Monday", "actually make it Tuesday"


async def until(check, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(600):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def said_by_person(request: dict) -> list[str]:  # type: ignore[type-arg]
    return [said(m["content"]) for m in request["messages"] if m["role"] == "user"]


async def test_a_message_that_joined_a_turn_is_in_its_redo_once(fake_llm: FakeOpenAI,
                                                                tmp_path):
    log, hold = tmp_path / "actions.jsonl", tmp_path / "hold"
    hold.touch()  # the balance look-up waits while this exists
    registry = tmp_path / "bank.yaml"
    settings = json.dumps({"log": str(log), "hold": str(hold)})
    registry.write_text(
        "tools:\n  - module: tests.fakes.risky_tools\n    only: [slow_balance]\n"
        f"    safe_to_repeat: true\n    settings: {settings}\n")
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_AGENTS_FILES=str(registry))
    fake_llm.script(Reply(tool_calls=[ToolCall("slow_balance", {"account": "dining"})]),
                    Hang(60))  # the next request of the turn: kill -9 while it waits
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.e2e.gateway_process", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert proc.stdin is not None
    db = sqlite3.connect(tmp_path / "valet.db")
    try:
        proc.stdin.write(f"{MONDAY}\n".encode())
        await proc.stdin.drain()
        await until(lambda: log.exists() and "balance" in log.read_text(), "the tool started")
        proc.stdin.write(f"{TUESDAY}\n".encode())  # while the slow tool runs
        await proc.stdin.drain()
        await until(lambda: db.execute("SELECT COUNT(*) FROM inbox").fetchone() == (2,),
                    "the second message is in the inbox")
        hold.unlink()
        await until(lambda: fake_llm.calls == 2, "the turn's next LLM request")
        # The same turn's next request carries it, after the tool's result.
        assert said_by_person(fake_llm.requests[1]) == [MONDAY, TUESDAY]
        assert fake_llm.requests[1]["messages"][-1] == {"role": "user", "content": TUESDAY}
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        assert db.execute("SELECT status FROM inbox ORDER BY id").fetchall() == [
            ("processing",), ("steered",)]

        fake_llm.script(Reply(content="Booked for Tuesday."))
        again = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.e2e.gateway_process", env=env, cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(again.communicate(b""), 60)
        assert again.returncode == 0, err.decode()
        assert out.decode() == "Booked for Tuesday.\n"  # one answer
        assert fake_llm.calls == 3  # the redo's one new request; no turn of its own for it
        assert said_by_person(fake_llm.requests[2]) == [MONDAY, TUESDAY]  # once, in order
        assert [json.loads(line)["kind"] for line in log.read_text().splitlines()] == [
            "balance"]  # the tool's recorded result was reused
        rows = db.execute("SELECT role, content FROM messages ORDER BY seq").fetchall()
        assert [r for r, _ in rows] == ["user", "assistant", "tool", "user", "assistant"]
        assert rows[0][1] == MONDAY and rows[3][1] == TUESDAY
        first, second = db.execute(
            "SELECT id, status, steered_into FROM inbox ORDER BY id").fetchall()
        assert first[1] == "done" and second[1:] == ("steered", f"inbox-{first[0]}")
        assert db.execute("SELECT COUNT(*) FROM turn_journal").fetchone() == (0,)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        db.close()
