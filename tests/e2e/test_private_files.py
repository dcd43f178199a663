"""Valet's files are private whatever the umask (a shell's usual 022 here): the data directory
0700; the database with its -wal and -shm, the log file, the terminal's endpoint file and a
backup 0600. The owner's console sign-in link reaches their chat, and the outbox keeps it no
longer than that: once sent, the stored text has no token (a copy of the database signs
nobody in)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import stat
import sys
from pathlib import Path

from tests.e2e.test_chat_beside_serve import _until_exists
from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.ports import free_port

OWNER_CHAT = 42


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _umask_022() -> None:
    os.umask(0o022)


async def _valet(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, cwd=ROOT, preexec_fn=_umask_022,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_with_umask_022_every_file_of_valet_is_private(fake_llm, tmp_path):
    fake_llm.script(Reply(content="Hello."))
    port = free_port()
    data = tmp_path / "data"
    async with FakeTelegram() as tg:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(port),
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
                        VALET_CONSOLE_ENABLED="true", VALET_LOG_LEVEL="INFO")
        del env["VALET_DATABASE_URL"]  # the default: valet.db in the data directory
        (tmp_path / "valet.yaml").write_text(
            f"owner:\n  telegram_ids: ['{OWNER_CHAT}']\nmemory:\n  enabled: false\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT, preexec_fn=_umask_022,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
            await _until_exists(data / "serve-terminal.json")
            tg.user_says(OWNER_CHAT, "hello")
            tg.user_says(OWNER_CHAT, "/console")
            await tg.wait_for(lambda: len(tg.texts(OWNER_CHAT)) >= 2, timeout=30)
            # While it runs: the WAL files exist (a clean stop folds them back in).
            assert _mode(data) == 0o700
            for name in ("valet.db", "valet.db-wal", "valet.db-shm", "valet.log",
                         "serve-terminal.json"):
                assert _mode(data / name) == 0o600, name
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            assert proc.returncode == 0, err.decode()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    [link_message] = [t for t in tg.texts(OWNER_CHAT) if "/console/login?t=" in t]
    token = link_message.split("/console/login?t=", 1)[1].split()[0].rstrip(".")
    assert len(token) >= 40
    with sqlite3.connect(data / "valet.db") as db:
        stored = [row[0] for row in db.execute("SELECT text FROM outbox WHERE status = 'sent'")]
    assert any("/console/login?t=(used or expired: removed)" in text for text in stored)
    assert not [text for text in stored if token in text]
    everything = (data / "valet.db").read_bytes()
    assert token.encode() not in everything  # nowhere in the file, not only not in a column

    backups = tmp_path / "backups"
    backups.mkdir(mode=0o755)
    os.chmod(backups, 0o755)
    code, _, err = await _valet(["backup", str(backups / "copy.db")], env)
    assert code == 0, err
    assert _mode(backups / "copy.db") == 0o600
    assert _mode(backups) == 0o755  # the backups' directory is the operator's: left as it is


async def test_a_data_directory_left_open_by_an_older_valet_is_narrowed(fake_llm, tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    (data / "valet.log").write_text("old line\n")
    os.chmod(data / "valet.log", 0o644)
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model", VALET_DATA_DIR=str(data),
                    VALET_DATABASE_URL=f"sqlite:///{data}/valet.db")
    sqlite3.connect(data / "valet.db").close()
    os.chmod(data / "valet.db", 0o644)
    fake_llm.script(Reply(content="Hi."))
    code, out, err = await run_valet(["chat", "--pipe"], env, "hi\n")
    assert code == 0 and out == "Hi.\n", err
    assert _mode(data) == 0o700
    assert _mode(data / "valet.db") == 0o600 and _mode(data / "valet.log") == 0o600
