"""Two `valet chat` processes on one SQLite file would both run every message: the second is
refused, in one line that says what to use instead; admin commands still work meanwhile, and a
crashed process does not keep the file locked."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from bot.db.sqlite_owner import DatabaseInUse
from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.fakes.fake_openai import Reply


async def test_a_second_chat_on_the_same_sqlite_file_is_refused_in_one_line(fake_llm,
                                                                            tmp_path):
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m")
    fake_llm.script(Reply(content="Hello from the first."))
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert first.stdin is not None and first.stdout is not None
    first.stdin.write(b"hi\n")
    await first.stdin.drain()
    assert await asyncio.wait_for(first.stdout.readline(), 30) == b"Hello from the first.\n"

    code, out, err = await run_valet(["chat", "--pipe"], env, "hi again\n")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("valet: another Valet process")
    assert f"{tmp_path}/valet.db" in err and "Postgres" in err and "Redis" in err
    assert fake_llm.calls == 1  # the refused process ran no turn

    # Admin commands only touch the database briefly: they work while the chat runs.
    for args in (["users", "list"], ["approvals", "list"], ["pair", "list"]):
        code, out, err = await run_valet(args, env)
        assert code == 0, (args, err)
    code, out, _ = await run_valet(["users", "list"], env)
    assert "owner" in out

    first.send_signal(signal.SIGKILL)  # the lock dies with its process
    await first.wait()
    fake_llm.script(Reply(content="Hello from the next one."))
    code, out, err = await run_valet(["chat", "--pipe"], env, "hi again\n")
    assert code == 0, err
    assert out == "Hello from the next one.\n"


async def test_the_file_is_free_again_once_the_running_app_closes(app_factory, fake_llm):
    first = await app_factory()
    await first.start()
    second = await app_factory()
    with pytest.raises(DatabaseInUse):
        await second.start()
    await first.close()
    await second.start()  # no error: it runs turns now
