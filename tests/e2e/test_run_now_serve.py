"""`valet tasks run-now` beside a running `valet serve` (SQLite, no Redis): the server runs the
task at once (its loopback endpoint), the command says what became of the run, and the
reminder reaches the owner's Telegram without waiting for anything else to happen. Real
`valet serve` and `valet tasks` processes; the real python-telegram-bot against the fake."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import time

from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.ports import free_port

OWNER_CHAT = 4242


async def test_run_now_is_run_by_the_running_server_and_delivered_at_once(fake_llm, tmp_path):
    async with FakeTelegram() as tg:
        port = free_port()
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
                        VALET_HTTP_PORT=str(port))
        (tmp_path / "valet.yaml").write_text(
            f"memory:\n  enabled: false\nowner:\n  telegram_ids: ['{OWNER_CHAT}']\n")
        code, out, err = await run_valet(["tasks", "add", "--user", "owner", "--schedule",
                                          "every day at 9", "--remind", "stretch"], env)
        assert code == 0, out + err
        task_id = out.split()[1].rstrip(":")
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", serve)
            tg.user_says(OWNER_CHAT, "/help")  # the owner has talked to the bot before
            await tg.wait_for(lambda: bool(tg.texts(OWNER_CHAT)), timeout=30)
            started = time.monotonic()
            code, out, err = await run_valet(["tasks", "run-now", task_id], env)
            assert code == 0, out + err
            assert out.strip() == f"ran {task_id}: sent (by the running valet serve)"
            await tg.wait_for(lambda: any("stretch" in t for t in tg.texts(OWNER_CHAT)),
                              timeout=30)
            took = time.monotonic() - started
            print(f"run-now to the owner's Telegram: {took:.2f} s")  # the note's number
            assert [t for t in tg.texts(OWNER_CHAT) if "stretch" in t] == ["⏰ Reminder: stretch"]
        finally:
            serve.send_signal(signal.SIGTERM)
            await asyncio.wait_for(serve.wait(), 60)


async def test_run_now_without_a_server_says_what_it_queued_waits(tmp_path):
    env = clean_env(tmp_path)
    code, out, _ = await run_valet(["tasks", "add", "--user", "owner", "--schedule",
                                    "every day at 9", "--remind", "stretch"], env)
    task_id = out.split()[1].rstrip(":")
    code, out, _ = await run_valet(["tasks", "run-now", task_id], env)
    assert code == 0
    assert out.strip() == (f"ran {task_id}: queued; no valet serve is running here: it goes "
                           "when one starts")


async def test_a_task_the_model_answers_is_sent_not_submitted(fake_llm, tmp_path):
    """A task with an instruction becomes a turn in the owner's queue: run-now waits for its
    answer to go out and says "sent" only then; the run's record says "sent" too (the
    console's recent runs read it), never "submitted" after the reply went out."""
    from tests.fakes.fake_openai import Reply

    fake_llm.responder = lambda body: Reply(content="Your summary: all calm.")
    async with FakeTelegram() as tg:
        port = free_port()
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
                        VALET_HTTP_PORT=str(port))
        (tmp_path / "valet.yaml").write_text(
            f"memory:\n  enabled: false\nowner:\n  telegram_ids: ['{OWNER_CHAT}']\n")
        code, out, err = await run_valet(["tasks", "add", "--user", "owner", "--schedule",
                                          "every day at 9", "--instruction",
                                          "summarise my day"], env)
        assert code == 0, out + err
        task_id = out.split()[1].rstrip(":")
        serve = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", serve)
            tg.started(OWNER_CHAT)
            code, out, err = await run_valet(["tasks", "run-now", task_id], env)
            assert code == 0, out + err
            assert out.strip() == f"ran {task_id}: sent (by the running valet serve)"
            assert "Your summary: all calm." in tg.texts(OWNER_CHAT)  # it really went out
            with sqlite3.connect(tmp_path / "valet.db") as db:
                [(outcome,)] = db.execute("SELECT outcome FROM trigger_runs WHERE task_id = ?",
                                          (task_id,)).fetchall()
            assert outcome == "sent"
        finally:
            serve.send_signal(signal.SIGTERM)
            await asyncio.wait_for(serve.wait(), 60)
