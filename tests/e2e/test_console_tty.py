"""`valet chat` as a person uses it: a real process in a real pseudo-terminal (pexpect), keys
pressed as bytes, the fake LLM on loopback. The fake server runs in this test's event loop,
so every wait on the terminal is pexpect's asynchronous one."""

from __future__ import annotations

import asyncio
import io
import sqlite3
import sys
from pathlib import Path

import pexpect

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.fakes.fake_openai import Fail, Reply
from tests.helpers import said

LEFT, UP, CTRL_C, CTRL_D = "\x1b[D", "\x1b[A", "\x03", "\x04"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
PROMPT = "you ›"  # the trailing space is drawn as a cursor move


def start_chat(env: dict[str, str], cwd: Path = ROOT) -> pexpect.spawn:
    env = {**env, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "bot", "chat"], env=env, cwd=str(cwd),
                          encoding="utf-8", dimensions=(40, 160), timeout=30)
    child.logfile_read = io.StringIO()  # everything the terminal showed
    return child


def screen(child: pexpect.spawn) -> str:
    return child.logfile_read.getvalue()


async def expect(child: pexpect.spawn, pattern: str) -> None:
    await child.expect_exact(pattern, async_=True)


async def leave(child: pexpect.spawn) -> str:
    child.send(CTRL_D)
    await child.expect(pexpect.EOF, async_=True)
    child.close()
    return screen(child)


def llm_env(fake_llm, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                     VALET_LLM_MODEL="fake-model", VALET_LLM_API_KEY="k")


def last_user_text(fake_llm) -> str:  # type: ignore[no-untyped-def]
    return said([m for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"][-1][
        "content"])


async def test_arrow_keys_edit_the_line_and_up_recalls_it(fake_llm, tmp_path):
    fake_llm.responder = lambda request: Reply(content="Noted.")
    child = start_chat(llm_env(fake_llm, tmp_path))
    await expect(child, PROMPT)
    child.send("hllo there" + LEFT * 9 + "e\r")
    await expect(child, "Noted.")
    assert last_user_text(fake_llm) == "hello there"
    await expect(child, PROMPT)
    child.send(UP + "\r")  # the history brings the line back
    await expect(child, "Noted.")
    await leave(child)
    assert fake_llm.calls == 2 and last_user_text(fake_llm) == "hello there"
    assert "hello there" in (tmp_path / "chat_history").read_text()  # beside the database


async def test_a_long_multi_line_paste_arrives_whole(fake_llm, tmp_path):
    fake_llm.responder = lambda request: Reply(content="Got it all.")
    pasted = ("word " * 600).strip() + "\n" + "x" * 3000  # 6,000 characters, two lines
    child = start_chat(llm_env(fake_llm, tmp_path))
    await expect(child, PROMPT)
    child.send(PASTE_START + pasted + PASTE_END)
    child.send("\r")
    await expect(child, "Got it all.")
    await leave(child)
    assert len(pasted) == 6000
    assert last_user_text(fake_llm) == pasted


async def test_ctrl_c_clears_the_line_and_twice_on_an_empty_line_leaves(fake_llm, tmp_path):
    fake_llm.responder = lambda request: Reply(content="Hi.")
    child = start_chat(llm_env(fake_llm, tmp_path))
    await expect(child, PROMPT)
    child.send("never mind this")
    child.send(CTRL_C)
    child.send("hello\r")
    await expect(child, "Hi.")
    assert last_user_text(fake_llm) == "hello" and fake_llm.calls == 1
    child.send(CTRL_C)
    await expect(child, "Ctrl-C again or Ctrl-D to leave")
    child.send(CTRL_C)
    await child.expect(pexpect.EOF, async_=True)
    child.close()
    assert child.exitstatus == 0


async def test_ctrl_c_during_a_slow_turn_stops_it_and_nothing_is_replayed(fake_llm, tmp_path):
    fake_llm.script(Reply(content="Too late.", delay=60))
    env = llm_env(fake_llm, tmp_path)
    child = start_chat(env)
    await expect(child, PROMPT)
    child.send("a slow one\r")
    await expect(child, "thinking…")  # the indicator while the model works
    for _ in range(600):  # the model has the request
        if fake_llm.calls:
            break
        await asyncio.sleep(0.05)
    child.send(CTRL_C)
    await expect(child, "Okay, I stopped.")
    out = await leave(child)
    assert "Too late." not in out
    db = sqlite3.connect(tmp_path / "valet.db")
    assert {s for (s,) in db.execute("SELECT status FROM inbox")} == {"done"}

    fake_llm.responder = lambda request: Reply(content="Fresh start.")
    again = start_chat(env)
    await expect(again, PROMPT)
    again.send("hello\r")
    await expect(again, "Fresh start.")
    out = await leave(again)
    assert "a slow one" not in out and "earlier run" not in out
    assert fake_llm.calls == 2  # the stopped message was not sent to the LLM again


async def test_a_rate_limited_retry_is_a_short_note_not_a_log_line(fake_llm, tmp_path):
    fake_llm.script(Fail(429, retry_after=0.1), Reply(content="There you are."))
    child = start_chat(llm_env(fake_llm, tmp_path))
    await expect(child, PROMPT)
    child.send("hi\r")
    await expect(child, "There you are.")
    out = await leave(child)
    assert "the LLM is busy (rate limited); trying again" in out
    assert "WARNING" not in out and "bot.llm.recovery" not in out
    assert "llm call failed" in (tmp_path / "valet.log").read_text()  # the full line: the log


async def test_a_message_typed_during_a_turn_waits_visibly_then_gets_its_answer(fake_llm,
                                                                               tmp_path):
    fake_llm.script(Reply(content="First answer.", delay=2), Reply(content="Second answer."))
    child = start_chat(llm_env(fake_llm, tmp_path))
    await expect(child, PROMPT)
    child.send("first\r")
    await expect(child, "thinking…")
    child.send("second\r")
    await expect(child, "(waits for the current reply)")
    await expect(child, "First answer.")
    await expect(child, "Second answer.")
    await leave(child)
    assert said([m for m in fake_llm.requests[1]["messages"] if m["role"] == "user"][-1][
        "content"]) == "second"


async def test_alt_enter_starts_a_new_line_and_enter_sends_one_message(fake_llm, tmp_path):
    fake_llm.responder = lambda request: Reply(content="Both lines, one message.")
    child = start_chat(llm_env(fake_llm, tmp_path))
    await expect(child, PROMPT)
    child.send("first line\x1b\rsecond line")  # Alt-Enter is Esc, Enter on a terminal
    child.send("\r")
    await expect(child, "Both lines, one message.")
    await leave(child)
    assert fake_llm.calls == 1
    assert last_user_text(fake_llm) == "first line\nsecond line"
