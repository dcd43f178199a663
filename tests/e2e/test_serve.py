"""`valet serve` as an operator runs it: a real process, Telegram through the fake Bot API
server, the fake LLM, health checks, and a clean stop on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import sys
from pathlib import Path

import aiohttp

from tests.e2e.test_console_pipe import clean_env
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


async def _get(url: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.json()


async def _until_up(url: str, proc: asyncio.subprocess.Process) -> None:
    for _ in range(300):
        if proc.returncode is not None:
            raise AssertionError("valet serve exited early")
        try:
            status, _ = await _get(url)
            if status == 200:
                return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("valet serve never became ready")


async def test_serve_answers_telegram_reports_health_and_stops_on_sigterm(fake_llm: FakeOpenAI,
                                                                          tmp_path):
    fake_llm.script(Reply(content="Hello from the service."))
    port = free_port()
    async with FakeTelegram() as tg:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(port),
                        VALET_TELEGRAM_TOKEN=TOKEN, VALET_TELEGRAM_API_URL=tg.api_url,
                        VALET_LOG_LEVEL="INFO")
        (tmp_path / "valet.yaml").write_text("owner:\n  telegram_ids: ['42']\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            await _until_up(f"http://127.0.0.1:{port}/readyz", proc)
            assert await _get(f"http://127.0.0.1:{port}/healthz") == (200, {"status": "alive"})
            status, body = await _get(f"http://127.0.0.1:{port}/readyz")
            assert status == 200 and body["checks"] == {"database": True, "telegram": True}
            tg.user_says(42, "hello")
            await tg.wait_for(lambda: tg.texts(42), timeout=20)
            assert tg.texts(42) == ["Hello from the service."]
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    log = err.decode()
    assert proc.returncode == 0, log
    assert "channel telegram started" in log and "long polling" in log
    assert "valet serve: stopped" in log
    assert TOKEN not in log and TOKEN.split(":")[1] not in log


async def test_a_bad_webhook_secret_stops_start_up_with_one_clear_line(tmp_path, fake_llm):
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                    VALET_HTTP_PORT=str(free_port()), VALET_TELEGRAM_TOKEN=TOKEN,
                    VALET_TELEGRAM_WEBHOOK_SECRET="has spaces!")
    (tmp_path / "valet.yaml").write_text(
        "telegram:\n  mode: webhook\n  webhook_url: https://valet.example.com\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert err.decode().strip().splitlines() == [
        "valet: telegram.mode webhook needs VALET_TELEGRAM_WEBHOOK_SECRET: 1-256 characters "
        "of A-Z, a-z, 0-9, _ and -"]
    assert "has spaces" not in err.decode()


async def test_a_port_already_taken_is_one_line_and_port_0_listens_where_it_says(
        tmp_path, fake_llm):
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": str(port)},
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    said = err.decode()
    assert proc.returncode == 2, said
    assert "Traceback" not in said
    assert said.strip().splitlines()[-1] == (
        f"valet: http: cannot listen on 127.0.0.1:{port}: address already in use (another "
        "program, or another valet serve, may be there: set http.port or VALET_HTTP_PORT)")

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": "0"},
        cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    try:
        async with asyncio.timeout(120):  # generous: a loaded machine starts Python slowly
            while not (listening := re.search(
                    rb"listening on http://127\.0\.0\.1:(\d+) ", await proc.stderr.readline())):
                assert proc.returncode is None, "valet serve exited early"
        picked = int(listening[1])
        assert picked != 0
        await _until_up(f"http://127.0.0.1:{picked}/healthz", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0


async def _serve_process(env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)


async def test_killed_between_prompt_and_tap_the_approved_action_runs_once(fake_llm, tmp_path):
    from tests.e2e.telegram_harness import prompt_with_buttons, risky_registry

    actions = tmp_path / "actions.log"
    async with FakeTelegram() as tg:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_TELEGRAM_TOKEN=TOKEN,
                        VALET_TELEGRAM_API_URL=tg.api_url)
        risky_registry(tmp_path, log=str(actions))
        procs = []
        try:
            env["VALET_HTTP_PORT"] = str(free_port())
            first = await _serve_process(env)
            procs.append(first)
            await _until_up(f"http://127.0.0.1:{env['VALET_HTTP_PORT']}/readyz", first)
            prompt, data = await prompt_with_buttons(tg, fake_llm, 42)
            first.kill()  # kill -9: no clean shutdown
            await first.wait()
            assert not actions.exists()
            env["VALET_HTTP_PORT"] = str(free_port())
            second = await _serve_process(env)
            procs.append(second)
            await _until_up(f"http://127.0.0.1:{env['VALET_HTTP_PORT']}/readyz", second)
            fake_llm.script(Reply(content="Sent: the team has the Q3 note."))
            tg.user_presses(42, prompt.message_id, data["Approve"])
            await tg.wait_for(lambda: "Sent: the team has the Q3 note." in tg.texts(42),
                              timeout=30)
            tg.user_presses(42, prompt.message_id, data["Approve"])  # a late second tap
            await tg.wait_for(lambda: len(tg.texts(42)) >= 3, timeout=30)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    assert [json.loads(line)["to"] for line in actions.read_text().splitlines()] == [
        "team@corp.example"]


async def test_serve_answers_a_signed_text_and_takes_events_only_with_the_token(
        fake_llm: FakeOpenAI, tmp_path):
    """SMS and the trigger engine's events on the same `valet serve` process."""
    from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed

    fake_llm.responder = lambda body: Reply(content="Hello by text.")
    port = free_port()
    public = "https://valet.example.com"
    async with FakeTwilio() as twilio:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(port),
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url, VALET_PUBLIC_URL=public,
                        VALET_SMS_FROM_NUMBER="+15005550006", VALET_EVENTS_TOKEN="ev-secret",
                        VALET_LOG_LEVEL="INFO")
        (tmp_path / "valet.yaml").write_text("owner:\n  phone_numbers: ['+15551230000']\n")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        try:
            await _until_up(f"{base}/readyz", proc)
            status, body = await _get(f"{base}/readyz")
            assert status == 200 and body["checks"] == {"database": True, "sms": True}
            async with aiohttp.ClientSession() as http:
                params = inbound_params("+15551230000", "hi", sid="SM" + "1" * 32)
                sent = await post_signed(http, f"{base}/sms/inbound", f"{public}/sms/inbound",
                                         params, twilio.auth_token)
                assert sent.status == 200
                event = {"source": "test", "type": "ping", "data": {}}
                async with http.post(f"{base}/events", json=event) as refused:
                    assert refused.status == 401
                async with http.post(f"{base}/events", json=event, headers={
                        "Authorization": "Bearer ev-secret"}) as accepted:
                    assert accepted.status in (200, 202)
            await twilio.wait_for(1, timeout=20)
            assert twilio.bodies_to("+15551230000") == ["Hello by text."]
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    log = err.decode()
    assert proc.returncode == 0, log
    assert "channel sms started (/sms/inbound, /sms/status)" in log
    assert twilio.auth_token not in log
