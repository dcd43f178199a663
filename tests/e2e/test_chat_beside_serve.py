"""`valet chat` while `valet serve` runs on the same SQLite file: the chat attaches to the
server's loopback endpoint and the server runs the turns (the chat never opens the database,
which the server holds)."""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import sys

from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Reply
from tests.helpers import said
from tests.ports import free_port


async def _serve(env: dict[str, str]) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    await _until_up(f"http://127.0.0.1:{env['VALET_HTTP_PORT']}/readyz", proc)
    return proc


async def _until_exists(path, timeout: float = 30.0) -> None:
    for _ in range(int(timeout * 20)):
        if path.exists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


async def test_chat_beside_a_running_serve_on_sqlite_is_a_conversation_serve_handles(
        fake_llm, tmp_path):
    fake_llm.script(Reply(content="Hello from the server."), Reply(content="Blue, you said."))
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(free_port()))
    server = await _serve(env)
    try:
        endpoint = tmp_path / "serve-terminal.json"
        await _until_exists(endpoint)
        assert stat.S_IMODE(endpoint.stat().st_mode) == 0o600
        assert json.loads(endpoint.read_text())["url"].startswith("ws://127.0.0.1:")
        code, out, err = await run_valet(["chat", "--pipe"], env,
                                         "my colour is blue\nwhat is my colour?\n")
        assert code == 0, err
        assert out.splitlines() == ["Hello from the server.", "Blue, you said."]
        # One conversation, held by the server: the second request carries the first turn.
        seen = [said(m["content"]) for m in fake_llm.requests[1]["messages"]
                if m["role"] == "user"]
        assert seen == ["my colour is blue", "what is my colour?"]
        assert server.returncode is None
        server.send_signal(signal.SIGTERM)
        _, log = await asyncio.wait_for(server.communicate(), 30)
        assert server.returncode == 0, log.decode()
        assert not endpoint.exists()  # a clean stop removes it
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()


async def test_a_file_left_by_a_killed_server_does_not_stop_the_chat(fake_llm, tmp_path):
    fake_llm.script(Reply(content="On my own."))
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(free_port()))
    server = await _serve(env)
    endpoint = tmp_path / "serve-terminal.json"
    await _until_exists(endpoint)
    server.kill()
    await server.wait()
    assert endpoint.exists()
    code, out, err = await run_valet(["chat", "--pipe"], env, "hi\n")
    assert code == 0, err
    assert out == "On my own.\n"


async def test_a_reminder_set_at_the_terminal_beside_serve_reaches_the_phone(app_factory):
    """The terminal beside `valet serve` is a window on the conversation: a reminder set
    there (its origin is the console) goes to the owner's phone when it fires, not to a
    terminal that may be closed."""
    from datetime import UTC, datetime, timedelta

    from bot.app.terminal import TerminalEndpoint
    from bot.config.sections import OwnerSettings
    from bot.contracts.clock import FakeClock
    from tests.helpers import RecordingSender
    from triggers.service import Owner

    clock = FakeClock(datetime(2026, 1, 5, 14, tzinfo=UTC))
    app = await app_factory(clock=clock, owner=OwnerSettings(phone_numbers=["+12125550123"]))
    sms = RecordingSender("sms")
    app.add_channel(sms)
    terminal = TerminalEndpoint.build(app)  # registered as the console channel, no one attached
    await app.start()
    await app.triggers.service.remind(Owner("owner", "UTC", channel="console"), "stretch",
                                      clock.now() + timedelta(minutes=5))
    clock.advance(minutes=5)
    await app.triggers.engine.tick()
    await app.gateway.wait_idle()
    assert sms.texts() == ["⏰ Reminder: stretch"]
    await terminal.close()
