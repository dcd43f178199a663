"""The command line as a user meets it: commands that cost no LLM call, a pipe that answers
each line, data found from any directory, help, version and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from bot.config import load_settings
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import Reply
from tests.helpers import said


def llm_env(fake_llm, tmp_path: Path, **extra: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                     VALET_LLM_MODEL="fake-model", VALET_LLM_API_KEY="k", **extra)


async def test_help_and_an_unknown_command_cost_no_llm_call(fake_llm, tmp_path):
    code, out, err = await run_valet(["chat", "--jsonl"], llm_env(fake_llm, tmp_path),
                                     "/help\n/frobnicate\n/cancel\n")
    assert code == 0, err
    replies = [json.loads(line) for line in out.splitlines()]
    assert len(replies) == 3
    assert "/pending" in replies[0]["reply"] and "/frobnicate" in replies[1]["reply"]
    assert {r["stop_reason"] for r in replies} == {"command"}
    assert fake_llm.calls == 0


async def test_thirty_piped_lines_from_the_owner_get_thirty_answers(fake_llm, tmp_path):
    def answer(request):  # type: ignore[no-untyped-def]
        words = said([m for m in request["messages"] if m["role"] == "user"][-1]["content"])
        return Reply(content=f"answer to {words}")

    fake_llm.responder = answer
    lines = [f"question {i}" for i in range(30)]
    code, out, err = await run_valet(["chat", "--pipe"], llm_env(fake_llm, tmp_path),
                                     "\n".join(lines) + "\n")
    assert code == 0, err
    assert out.splitlines() == [f"answer to {line}" for line in lines]  # in order, no limit


async def test_one_valet_yaml_from_two_directories_is_one_conversation(fake_llm, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # Memory off: its background extraction call would take a scripted reply.
    (home / "valet.yaml").write_text("timezone: Europe/Paris\nmemory:\n  enabled: false\n")
    env = llm_env(fake_llm, tmp_path, VALET_CONFIG=str(home / "valet.yaml"))
    del env["VALET_DATABASE_URL"]  # the default: beside the valet.yaml
    fake_llm.script(Reply(content="Noted: blue."), Reply(content="Blue."))
    here, there = tmp_path / "a", tmp_path / "b"
    here.mkdir()
    there.mkdir()
    code, out, err = await run_valet(["chat", "--pipe"], env, "my colour is blue\n", cwd=here)
    assert code == 0 and out == "Noted: blue.\n", err
    code, out, err = await run_valet(["chat", "--pipe"], env, "what is my colour?\n", cwd=there)
    assert code == 0 and out == "Blue.\n", err
    seen = [said(m["content"]) for m in fake_llm.requests[1]["messages"]
            if m["role"] == "user"]
    assert seen == ["my colour is blue", "what is my colour?"]
    assert (home / "data" / "valet.db").exists()
    assert not (here / "data").exists() and not (there / "data").exists()
    code, out, _ = await run_valet(["doctor"], env, cwd=there)
    assert f"data directory: {home / 'data'}" in out
    assert f"chat log file: {home / 'data' / 'valet.log'}" in out


def test_without_a_valet_yaml_the_data_lives_in_the_users_data_directory(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)  # no valet.yaml here
    settings = load_settings(None, env={})
    assert settings.database_url == f"sqlite:///{tmp_path / 'xdg' / 'valet' / 'valet.db'}"


def test_a_relative_database_path_is_read_from_the_valet_yaml_directory(tmp_path):
    (tmp_path / "valet.yaml").write_text("database_url: sqlite:///state/v.db\n")
    settings = load_settings(str(tmp_path / "valet.yaml"), env={})
    assert settings.database_url == f"sqlite:///{tmp_path / 'state' / 'v.db'}"
    assert settings.data_dir() == tmp_path / "state"


async def test_bare_valet_prints_help_and_version_is_known(tmp_path):
    code, out, _ = await run_valet([], clean_env(tmp_path))
    assert code == 0 and "usage: valet" in out and "chat" in out
    code, out, _ = await run_valet(["--version"], clean_env(tmp_path))
    assert code == 0 and out.startswith("valet ")


async def test_global_options_work_after_the_command(fake_llm, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("llm:\n  model: m\n  timeout_seconds: soon\n")
    code, _, err = await run_valet(["chat", "--config", str(other)], clean_env(tmp_path), "hi\n")
    assert code == 2 and f"{other}:3: llm.timeout_seconds" in err
    code, _, err = await run_valet(["users", "list", "--config", str(other)],
                                   clean_env(tmp_path))
    assert code == 2 and f"{other}:3" in err


async def test_an_invalid_option_value_is_a_usage_error(tmp_path):
    code, out, err = await run_valet(["approvals", "list", "--status", "bogus"],
                                     clean_env(tmp_path))
    assert code == 2 and out == "" and "invalid choice: 'bogus'" in err


async def test_tables_have_headers(tmp_path):
    code, out, err = await run_valet(["users", "list"], clean_env(tmp_path))
    assert code == 0, err
    assert out.splitlines()[0].split() == ["ID", "NAME", "TIMEZONE", "LINKED", "FLAGS"]


def test_every_command_and_argument_has_a_help_line():
    import argparse

    from bot.cli.main import parser

    def walk(p: argparse.ArgumentParser, path: str) -> list[str]:
        missing = []
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    if not child.description:
                        missing.append(f"{path} {name}")
                    missing += walk(child, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(parser(), "valet") == []


async def test_a_tool_module_beside_valet_yaml_is_importable(fake_llm, tmp_path):
    home = tmp_path / "deploy"
    (home / "mytools").mkdir(parents=True)
    (home / "mytools" / "__init__.py").write_text("")
    (home / "mytools" / "greet.py").write_text(
        "from bot.tools import tool\n\n\n@tool\nasync def greet(name: str) -> str:\n"
        "    \"\"\"Greet someone.\n\n    Args:\n        name: who\n    \"\"\"\n"
        "    return f'Hello, {name}!'\n")
    (home / "registry.yaml").write_text("tools:\n  - module: mytools.greet\n")
    (home / "valet.yaml").write_text("agents:\n  registries: [registry.yaml]\n")
    from tests.fakes.fake_openai import ToolCall

    fake_llm.script(Reply(tool_calls=[ToolCall("greet", {"name": "Ann"})]),
                    Reply(content="Greeted."))
    env = llm_env(fake_llm, tmp_path, VALET_CONFIG=str(home / "valet.yaml"))
    code, out, err = await run_valet(["chat", "--pipe"], env, "greet Ann\n", cwd=tmp_path)
    assert code == 0 and out == "Greeted.\n", err
    results = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results == ["Hello, Ann!"]


async def test_a_previous_runs_message_is_answered_first_and_marked(fake_llm, tmp_path):
    import asyncio
    import signal
    import sys

    from tests.e2e.test_console_pipe import ROOT
    from tests.fakes.fake_openai import Hang

    env = llm_env(fake_llm, tmp_path)
    fake_llm.script(Hang(60), Reply(content="The answer is 42."), Reply(content="Hello."))
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert first.stdin is not None
    first.stdin.write(b"what is the answer?\n")
    await first.stdin.drain()
    for _ in range(600):
        if fake_llm.calls:
            break
        await asyncio.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    await first.wait()

    code, out, err = await run_valet(["chat", "--jsonl"], env, "hi\n")
    assert code == 0, err
    replies = [json.loads(line) for line in out.splitlines()]
    assert replies == [
        {"reply": "The answer is 42.", "stop_reason": "final_answer", "earlier_run": True},
        {"reply": "Hello.", "stop_reason": "final_answer"}]
    assert "answers a message left from an earlier run" in err
