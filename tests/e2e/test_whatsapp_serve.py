"""WhatsApp against a real `valet serve`, the fake Twilio (its WhatsApp side) and the fake
LLM: a chat; a card as quick-reply buttons whose YES runs the action exactly once (pressed
twice); a voice note heard; a forged signature refused; a reminder due outside the 24-hour
window sent as its template; and one Twilio refuses with 63016 (the window closed by its
clock) sent on the owner's Telegram with a line saying why."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.e2e.test_console_pipe import ROOT, clean_env, run_valet
from tests.e2e.test_serve import _until_up
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, post_signed
from tests.fakes.fake_whatsapp import whatsapp_params
from tests.helpers import until
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
SANDBOX = "+14155238886"
ALICE = "+12125550123"
OWNER_CHAT = 4242


@asynccontextmanager
async def serving(env: dict[str, str], twilio: FakeTwilio) -> Any:
    """A real `valet serve` on a free port, once it says it is ready; its status callbacks
    reach it."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env={**env, "VALET_HTTP_PORT": str(port)},
        cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        await _until_up(f"{base}/readyz", proc)
        twilio.whatsapp.deliver_reports(base, PUBLIC)
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), 60)


def whatsapp_env(tmp_path: Path, fake_llm: Any, twilio: FakeTwilio, **extra: str
                 ) -> dict[str, str]:
    return clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                     VALET_PUBLIC_URL=PUBLIC, VALET_WHATSAPP_FROM_NUMBER=SANDBOX,
                     VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                     VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                     VALET_TWILIO_API_URL=twilio.base_url, **extra)


async def write(http: aiohttp.ClientSession, base: str, twilio: FakeTwilio, body: str,
                sid: str, **extra: Any) -> int:
    params = whatsapp_params(ALICE, body, sid=sid, to=SANDBOX,
                             account_sid=twilio.account_sid, **extra)
    async with await post_signed(http, base + "/whatsapp/inbound", PUBLIC + "/whatsapp/inbound",
                                 params, twilio.auth_token) as r:
        return r.status


def got(twilio: FakeTwilio) -> list[str]:
    return [m.body for m in twilio.sent if m.to == "whatsapp:" + ALICE
            and m.sid not in twilio.whatsapp.undelivered]


async def test_a_chat_a_card_pressed_yes_twice_runs_once_and_a_voice_note(fake_llm, tmp_path):
    log = tmp_path / "actions.jsonl"
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        f"    approval: always\n    settings: {{log: {log}}}\n")
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        env = whatsapp_env(tmp_path, fake_llm, twilio, VALET_AGENTS_FILES=str(registry))
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\nllm:\n  transcription_model: whisper-1\n"
            f"access:\n  channels:\n    whatsapp: {{policy: allowlist, allow: ['{ALICE}']}}\n")
        async with serving(env, twilio) as base:
            params = whatsapp_params(ALICE, "hi", sid="SM1", to=SANDBOX,
                                     account_sid=twilio.account_sid)
            async with await post_signed(http, base + "/whatsapp/inbound",
                                         PUBLIC + "/whatsapp/inbound", params,
                                         twilio.auth_token, signature="forged") as r:
                assert r.status == 403
            fake_llm.script(Reply(content="Hello Alice!"))
            assert await write(http, base, twilio, "hi", "SM1") == 200
            await until(lambda: got(twilio) == ["Hello Alice!"], "the chat's reply")

            fake_llm.script(Reply(tool_calls=[ToolCall("send_email", {
                "to": "team@corp.example", "subject": "Q3"})]))
            assert await write(http, base, twilio, "email the team about Q3", "SM2") == 200
            await until(lambda: any(m.content_sid for m in twilio.sent), "the card")
            [card] = [m for m in twilio.sent if m.content_sid]
            yes = json.loads(card.content_variables or "{}")["2"]
            assert card.body.startswith("Send email (to: team@corp.example")
            assert not log.exists()
            fake_llm.script(Reply(content="Sent."))
            for sid in ("SM3", "SM4"):  # pressed twice
                assert await write(http, base, twilio, "✅ Yes", sid,
                                   button=(yes, "✅ Yes")) == 200
            await until(lambda: "Sent." in got(twilio), "the action's reply")
            await until(lambda: log.exists(), "the action")

            fake_llm.transcript = "remind me to call mum"
            fake_llm.script(Reply(content="Noted: call mum."))
            url = twilio.whatsapp.add_media(b"OggS-voice", "audio/ogg")
            assert await write(http, base, twilio, "", "SM5", media=[(url, "audio/ogg")]) == 200
            await until(lambda: any("Noted: call mum." in b for b in got(twilio)),
                        "the voice note's reply")
        assert fake_llm.transcription_files[-1] == "voice.ogg"
        [heard] = [b for b in got(twilio) if "Noted: call mum." in b]
        assert heard.startswith("🎤 “remind me to call mum”")
        sent = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(sent) == 1 and sent[0]["to"] == "team@corp.example"


async def run_reminder(env: dict[str, str], text: str) -> None:
    code, out, err = await run_valet(["tasks", "add", "--user", "owner", "--schedule",
                                      "every day at 9", "--remind", text, "--channel",
                                      "whatsapp"], env)
    assert code == 0, out + err
    task_id = out.split()[1].rstrip(":")
    code, out, err = await run_valet(["tasks", "run-now", task_id], env)
    assert code == 0, out + err


async def test_a_reminder_outside_the_window_goes_as_its_template(fake_llm, tmp_path):
    async with FakeTwilio() as twilio:
        template = twilio.whatsapp.add_template("Valet reminds you: {{1}}")
        env = whatsapp_env(tmp_path, fake_llm, twilio)
        (tmp_path / "valet.yaml").write_text(
            f"memory:\n  enabled: false\nowner:\n  phone_numbers: ['{ALICE}']\n"
            f"whatsapp:\n  templates:\n    reminder: {template}\n")
        async with serving(env, twilio):
            await run_reminder(env, "stretch")  # the owner never wrote: no window
            await until(lambda: got(twilio), "the reminder")
        [reminder] = [m for m in twilio.sent if m.to == "whatsapp:" + ALICE]
        assert reminder.content_sid == template
        assert reminder.body == "Valet reminds you: ⏰ Reminder: stretch"


async def test_a_63016_sends_the_reminder_on_telegram_saying_why(fake_llm, tmp_path):
    async with FakeTwilio() as twilio, FakeTelegram() as tg, \
            aiohttp.ClientSession() as http:
        env = whatsapp_env(tmp_path, fake_llm, twilio, VALET_TELEGRAM_TOKEN=TOKEN,
                           VALET_TELEGRAM_API_URL=tg.api_url)
        (tmp_path / "valet.yaml").write_text(
            f"memory:\n  enabled: false\nowner:\n  phone_numbers: ['{ALICE}']\n"
            f"  telegram_ids: ['{OWNER_CHAT}']\n")
        async with serving(env, twilio) as base:
            tg.user_says(OWNER_CHAT, "/help")  # the owner has talked to the bot before
            await tg.wait_for(lambda: bool(tg.texts(OWNER_CHAT)), timeout=30)
            fake_llm.script(Reply(content="Hi."))
            assert await write(http, base, twilio, "hi", "SM1") == 200  # Valet: window open
            await until(lambda: got(twilio) == ["Hi."], "the reply")
            twilio.whatsapp.close_window(ALICE)  # ... but Twilio's clock says closed
            await run_reminder(env, "stretch")
            await tg.wait_for(lambda: any("stretch" in t for t in tg.texts(OWNER_CHAT)),
                              timeout=30)
            [report] = await twilio.whatsapp.wait_reports(1)
            assert report.params["ErrorCode"] == "63016" and report.status == 200
        [moved] = [t for t in tg.texts(OWNER_CHAT) if "stretch" in t]
        assert moved == ("(WhatsApp lets me write to you first only within 24 hours of your "
                         "last message there, so this comes here.)\n\n⏰ Reminder: stretch")
        assert got(twilio) == ["Hi."]  # the refused one never reached WhatsApp


async def test_onboard_sets_up_the_sandbox_after_the_sms_step(fake_llm, tmp_path):
    from tests.e2e.test_onboard import flags, onboard_env

    fake_llm.responder = lambda body: Reply(tool_calls=[ToolCall("multiply", {"a": 6, "b": 7})]) \
        if body.get("tools") else Reply(content="ready")
    async with FakeTelegram() as tg, FakeTwilio() as twilio:
        tg.user_says(OWNER_CHAT, "/start")
        env = onboard_env(tmp_path, tg, twilio)
        code, out, err = await run_valet(flags(fake_llm, "--wait-for-owner", "20",
                                               "--whatsapp-from", "whatsapp:" + SANDBOX,
                                               "--whatsapp-join", "join shiny-cat"), env)
        assert code == 0, out + err
        assert f"ok: the sandbox; each person first sends 'join shiny-cat' to {SANDBOX}" in out
        assert f"set WhatsApp sender {SANDBOX}'s 'When a message comes in' to " \
               f"{PUBLIC}/whatsapp/inbound (HTTP POST)" in out
        config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
        assert config["whatsapp"] == {"from_number": SANDBOX, "sandbox_join": "join shiny-cat"}
        assert twilio.auth_token not in out + err
