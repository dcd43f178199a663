"""`valet chat` as a user runs it: a real process, pipe mode, the fake LLM on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.fakes.fake_openai import Reply, ToolCall

ROOT = Path(__file__).resolve().parents[2]


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VALET_", "OPENAI_"))}
    env.update({"VALET_DATABASE_URL": f"sqlite:///{tmp_path}/valet.db",
                "VALET_CONFIG": str(tmp_path / "valet.yaml"), "PYTHONPATH": str(ROOT),
                # The stories script tool calls directly: every tool on every request.
                "VALET_TOOL_EXPOSURE": "all"})
    # Memory off: its background extraction call would take a scripted reply.
    (tmp_path / "valet.yaml").write_text("memory:\n  enabled: false\n")
    env.update(extra)
    return env


async def run_valet(args: list[str], env: dict[str, str], stdin: str = "",
                    cwd: Path | None = None, timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, cwd=cwd or ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_pipe_chat_calls_two_tools_concurrently_then_answers(fake_llm, tmp_path):
    fake_llm.script(
        Reply(tool_calls=[ToolCall("calculate", {"expression": "17*3"}),
                          ToolCall("current_time", {"timezone": "Europe/Paris"})]),
        Reply(content="17*3 is 51, and it is afternoon in Paris."),
        Reply(content="You're welcome."))
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model", VALET_LLM_API_KEY="k")
    code, out, err = await run_valet(["chat", "--pipe"], env,
                                     "what is 17*3 and the time in Paris?\n\nthanks\n")
    assert code == 0, err
    assert out.splitlines() == ["17*3 is 51, and it is afternoon in Paris.", "You're welcome."]
    tool_results = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results[0].endswith("= 51")
    assert "Paris" in tool_results[1]


async def test_jsonl_mode_for_scripts(fake_llm, tmp_path):
    fake_llm.script(Reply(content="line one\nline two"))
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model")
    code, out, err = await run_valet(["chat", "--jsonl"], env, "hi\n")
    assert code == 0, err
    assert json.loads(out) == {"reply": "line one\nline two", "stop_reason": "final_answer"}


async def test_no_llm_configured_says_how_in_one_line_and_exits_2(tmp_path):
    code, _out, err = await run_valet(["chat"], clean_env(tmp_path), "hi\n")
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "VALET_LLM_MODEL" in err and "VALET_LLM_BASE_URL" in err


async def test_a_malformed_config_stops_start_up_with_file_and_line(tmp_path):
    env = clean_env(tmp_path)
    (tmp_path / "valet.yaml").write_text("llm:\n  model: m\n  timeout_seconds: soon\n")
    code, _, err = await run_valet(["chat"], env, "hi\n")
    assert code == 2
    assert f"{tmp_path}/valet.yaml:3: llm.timeout_seconds" in err


async def test_doctor_reports_a_healthy_setup_and_a_missing_llm(fake_llm, tmp_path):
    fake_llm.responder = lambda body: Reply(content="ready")
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="fake-model")
    code, out, err = await run_valet(["doctor"], env)
    assert code == 0, out + err
    assert "answered" in out and "all good" in out
    code, out, _ = await run_valet(["doctor"], clean_env(tmp_path))
    assert code == 1 and "No LLM configured" in out
