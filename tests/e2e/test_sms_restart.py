"""`valet serve` is killed (-9) after the SMS approval prompt went out; restarted; the person
replies "1": the action runs exactly once."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

import aiohttp

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
ALICE = "+12125550123"


async def start_server(env: dict[str, str]) -> tuple[asyncio.subprocess.Process, str]:
    """A real `valet serve` on a free port, once it says it is ready."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": str(port)},
        cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
    return proc, f"http://127.0.0.1:{port}/sms/inbound"


async def text(http: aiohttp.ClientSession, url: str, body: str, sid: str, token: str) -> int:
    params = inbound_params(ALICE, body, sid=sid)
    async with await post_signed(http, url, PUBLIC + "/sms/inbound", params, token) as r:
        return r.status


async def test_a_reply_after_a_kill_between_prompt_and_answer_runs_the_action_once(
        fake_llm, tmp_path):
    log = tmp_path / "actions.jsonl"
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        f"    approval: always\n    settings: {{log: {log}}}\n")
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_AGENTS_FILES=str(registry), VALET_PUBLIC_URL=PUBLIC,
                        VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url)
        (tmp_path / "valet.yaml").write_text(
            f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n")
        fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {
            "to": "team@corp.example", "subject": "Q3"})]))
        first, url = await start_server(env)
        assert await text(http, url, "email the team about Q3", "SM1", twilio.auth_token) == 200
        [prompt] = await twilio.wait_for(1, timeout=30)
        assert prompt.body.endswith("Reply 1 to send, 2 to cancel, or tell me what to change.")
        first.send_signal(signal.SIGKILL)  # the prompt is out; nobody has answered yet
        await first.wait()
        assert not log.exists()

        fake_llm.script(Reply(content="Sent. Anything else?"))
        second, url = await start_server(env)
        try:
            assert await text(http, url, "1", "SM2", twilio.auth_token) == 200
            assert await text(http, url, "1", "SM2", twilio.auth_token) == 200  # retried
            await twilio.wait_for(2, timeout=30)
            fake_llm.script(Reply(content="Nothing is waiting."))
            assert await text(http, url, "1", "SM3", twilio.auth_token) == 200
            await twilio.wait_for(3, timeout=30)
        finally:
            second.send_signal(signal.SIGTERM)
            await second.wait()
        assert [m.body for m in twilio.sent] == [prompt.body, "Sent. Anything else?",
                                                 "Nothing is waiting."]
        sent = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(sent) == 1 and sent[0]["to"] == "team@corp.example"
