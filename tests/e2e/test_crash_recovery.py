"""Kill -9 in the middle of a turn; restart; the message is answered exactly once."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys

from bot.gateway.outbox import Lane
from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.fakes.fake_openai import Hang, Reply
from tests.fakes.fake_openai import Reply as LLMReply


async def test_sigkill_mid_turn_then_restart_answers_once(fake_llm, tmp_path):
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m")
    fake_llm.script(Hang(60), Reply(content="Sorry for the wait: the answer is 42."))
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert first.stdin is not None
    first.stdin.write(b"what is the answer?\n")
    await first.stdin.drain()
    for _ in range(600):  # the turn is under way once the LLM has the request
        if fake_llm.calls:
            break
        await asyncio.sleep(0.05)
    assert fake_llm.calls == 1
    first.send_signal(signal.SIGKILL)
    await first.wait()

    second = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(second.communicate(b""), 60)
    assert second.returncode == 0, err.decode()
    assert out.decode() == "Sorry for the wait: the answer is 42.\n"
    assert fake_llm.calls == 2

    db = sqlite3.connect(tmp_path / "valet.db")
    rows = db.execute("SELECT role, content FROM messages ORDER BY seq").fetchall()
    assert rows == [("user", "what is the answer?"),
                    ("assistant", "Sorry for the wait: the answer is 42.")]
    assert db.execute("SELECT status, attempts FROM inbox").fetchall() == [("done", 2)]
    assert db.execute("SELECT status FROM outbox").fetchall() == [("sent",)]

    # A third start finds nothing left to do and says nothing.
    third = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(third.communicate(b""), 60)
    assert out == b"" and fake_llm.calls == 2


async def test_a_turn_written_before_the_crash_is_not_run_again(app_factory, fake_llm):
    """The crash came after the turn was stored but before the reply was queued (a turn
    stored apart from its reply: how a version before the turn's one closing write did it)."""
    from tests.helpers import RecordingSender, incoming

    app = await app_factory()
    sender = RecordingSender("console")
    app.add_channel(sender)
    row_id = await app.gateway.deps.inbox.record(incoming("hi", channel="console",
                                                          address="local"))
    await app.gateway.deps.inbox.assign(row_id, "owner")
    await app.gateway.deps.inbox.claim_next("owner")  # the crashed process had claimed it
    await app.history.append("owner", f"inbox-{row_id}", [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "stored answer"}],
        channel="console", at=app.clock.now())
    await app.start()  # recovery
    await app.gateway.wait_idle()
    assert sender.texts() == ["stored answer"]
    assert fake_llm.calls == 0
    assert await app.history.count("owner") == 2


async def test_a_send_cut_short_by_a_crash_does_not_block_later_replies(app_factory,
                                                                         fake_llm):
    """A process died between claiming a reply and marking it sent: that reply's fate is
    unknown (dead-lettered, never resent), and later replies to the address still go out."""
    from tests.helpers import RecordingSender, incoming

    app = await app_factory()
    console = RecordingSender("console")
    app.add_channel(console)
    outbox = app.outbound.outbox
    stuck = await outbox.enqueue(app.db, dedupe_key="old", user_id="owner", channel="console",
                                 address="local", text="cut short", at=app.clock.now(),
                                 lane=Lane.URGENT)
    assert await outbox.claim(stuck, app.clock.now())  # ...and then the process died
    await app.start()
    fake_llm.script(LLMReply(content="still here"))
    await app.gateway.receive(incoming("hello?", channel="console", address="local"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert console.texts() == ["still here"]
    [dead] = await outbox.list("dead")
    assert "outcome unknown" in dead["last_error"]
