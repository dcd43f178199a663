"""`valet chat --pipe` fed lines that are not valid text: every line is answered, the chat
reads on to the end and exits 0, on SQLite and on Postgres."""

from __future__ import annotations

import asyncio
import sys

import pytest

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.helpers import said

LINES = [b"caf\xe9 in latin-1", b"nul\x00in the middle", b"\xff\xfe\xfd",
         b"half an emoji \xf0\x9f\x91", b"escape \x1b[2J and bell \x07", b"still here?"]


async def run_pipe(env: dict[str, str], stdin: bytes) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    return proc.returncode or 0, out.decode(), err.decode()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_lines_of_broken_bytes_are_each_answered_and_the_chat_exits_0(
        backend, fake_llm, tmp_path, request):
    seen: list[str] = []

    def respond(body):
        from tests.fakes.fake_openai import Reply

        seen.append(said(body["messages"][-1]["content"]))
        return Reply(content=f"answer {len(seen)}")

    fake_llm.responder = respond
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model", VALET_LLM_API_KEY="k")
    if backend == "postgres":
        env["VALET_DATABASE_URL"] = request.getfixturevalue("postgres_dsn")
    code, out, err = await run_pipe(env, b"\n".join(LINES) + b"\n")
    assert code == 0, err
    assert "Traceback" not in err
    assert out.splitlines() == [f"answer {i}" for i in range(1, len(LINES) + 1)]
    assert seen == ["caf\ufffd in latin-1", "nulin the middle", "\ufffd\ufffd\ufffd",
                    "half an emoji \ufffd", "escape [2J and bell", "still here?"]
