"""Approve an email while the mail server is down (it is queued), kill -9 the process, bring
the server up, restart: the message arrives exactly once, the person is told once, and a
further restart sends nothing more."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import UTC, datetime

from bot.app.database import open_database
from bot.credentials import CredentialStore, new_key
from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.smtp_server import SmtpServer


async def read_until(stream: asyncio.StreamReader, marker: bytes) -> list[bytes]:
    lines = []
    while True:
        line = await asyncio.wait_for(stream.readline(), 30)
        assert line, f"the process ended before {marker!r}: {lines}"
        lines.append(line)
        if marker in line:
            return lines


async def mail_rows(db_url: str) -> list[dict]:
    db = await open_database(db_url)
    try:
        return await db.fetch("SELECT approval_id, status, attempts, owed FROM mail_outbox")
    finally:
        await db.close()


async def told(db_url: str) -> list[tuple[str, str, str]]:
    db = await open_database(db_url)
    try:
        rows = await db.fetch("SELECT channel, text, status FROM outbox WHERE text LIKE $1",
                              "%your email%")
    finally:
        await db.close()
    return [(r["channel"], r["text"], r["status"]) for r in rows]


async def test_an_email_approved_while_the_server_is_down_arrives_once_after_a_kill(
        fake_llm, tmp_path):
    smtp = SmtpServer()  # its port is chosen; it is not listening yet
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_SECRET_KEY=new_key())
    db_url = env["VALET_DATABASE_URL"]
    code, _, err = await run_valet(["chat", "--pipe"], env, "")  # the owner exists
    assert code == 0, err
    db = await open_database(db_url)
    await CredentialStore.from_env(db, env).put("owner", "email", smtp.secret(),
                                                datetime.now(UTC))
    await db.close()

    fake_llm.script(Reply(tool_calls=[ToolCall("send_mail", {
        "to": "ana@example.com", "subject": "Numbers", "body": "The Q3 numbers."})]),
        Reply(content="The mail server is down; it's queued."))
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(b"email Ana the Q3 numbers\n")
    await first.stdin.drain()
    shown = b"".join(await read_until(first.stdout, b"Reply 1 yes")).decode()
    assert "Send email “Numbers” to ana@example.com from Mia Example <me@example.org>" in shown
    first.stdin.write(b"yes\n")
    await first.stdin.drain()
    await read_until(first.stdout, b"it's queued")
    [queued] = await mail_rows(db_url)
    assert queued["status"] == "queued" and queued["attempts"] == 1
    first.send_signal(signal.SIGKILL)  # queued, and the process dies
    await first.wait()

    await smtp.start()
    try:
        fake_llm.script(Reply(content="Hello."))
        code, out, err = await run_valet(["chat", "--pipe"], env, "hello\n")
        # The reply, and maybe already the notice (the deliverer runs beside the turn; which
        # is shown first depends on timing): each at most once.
        lines = out.splitlines()
        assert code == 0 and lines.count("Hello.") == 1, err
        assert lines.count("Sent your email “Numbers” to ana@example.com.") <= 1
        assert [r.message["Message-ID"] for r in smtp.received] == [
            f"<valet.{queued['approval_id']}@example.org>"]
        [sent] = await mail_rows(db_url)
        assert sent["status"] == "sent" and sent["attempts"] == 2 and sent["owed"] == 0

        # Once more: nothing is sent again, and the person was told once (handed to their
        # channel; the pipe may be closing by then, so the outbox says it).
        code, _, err = await run_valet(["chat", "--pipe"], env, "")
        assert code == 0, err
        assert len(smtp.received) == 1
        assert await told(db_url) == [("console", "Sent your email “Numbers” to "
                                       "ana@example.com.", "sent")]
    finally:
        await smtp.stop()
