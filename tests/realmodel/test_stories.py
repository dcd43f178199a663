"""The real model behind `valet serve`: SmolLM2-135M on llama.cpp's own server
(tests/realmodel/server.py), a conversation on Telegram with the model's own chat template
and one by SMS with a tool template that makes the server return native tool calls. Whatever
the model says, Valet keeps its promises: every turn answered within its bound, nothing of a
template on screen, nothing changed without a card (and a card for a change the model asks
for), and `valet doctor` says what the conversation showed."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from bot.cli.doctor_llm import wrong_template
from tests.e2e.test_console_pipe import clean_env
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed
from tests.realmodel.conftest import LlamaServer
from tests.realmodel.stories import (
    LLM_TIMEOUT,
    RecordingProxy,
    Turn,
    after_the_conversation,
    answered,
    check_story,
    start_serve,
    stop_serve,
)

pytestmark = pytest.mark.slow
OWNER_CHAT = 42
PUBLIC = "https://valet.example.com"
ALICE = "+12125550123"
SETTINGS = ("memory:\n  enabled: false\n"  # no background extraction between the turns
            f"llm:\n  timeout_seconds: {LLM_TIMEOUT}\n  max_output_tokens: 120\n")
# A persona whose prompt shows a call (as the recordings' did): it makes the model try tools.
PERSONA = """name: Valet
system_prompt: |
  You are Valet, a personal assistant people reach by text message. Be warm and brief.
  To use a tool, answer with only a tool call, like this:
  User: email ann@example.com that I am late
  Assistant: <tool_call>
  {"name": "send_email", "arguments": {"to": "ann@example.com", "subject": "Late"}}
  </tool_call>
style:
  sms: Plain text only. Keep it under 300 characters.
  telegram: Plain text. Keep messages short.
  console: Plain text.
"""


# An earlier turn in which the model called send_email (approved then): the tool template
# renders it as a <tool_call> block in the prompt, which the model follows (the recordings'
# hand-made requests with such a history got native calls in 8 of 14 samples).
EARLIER = [
    {"role": "user", "content": "email bob@example.com that lunch is at noon"},
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_earlier", "type": "function", "function": {
            "name": "send_email",
            "arguments": '{"to": "bob@example.com", "subject": "Lunch at noon"}'}}]},
    {"role": "tool", "tool_call_id": "call_earlier",
     "content": "Email sent to bob@example.com (subject “Lunch at noon”)."},
    {"role": "assistant", "content": "Sent."}]


async def seed_an_earlier_email(tmp_path: Path, env: dict[str, str]) -> None:
    from bot.app import App
    from bot.config import load_settings

    app = await App.build(load_settings(str(tmp_path / "valet.yaml"), env=env))
    try:
        owner = await app.ensure_owner()
        await app.history.append(owner.id, "earlier", EARLIER, channel="sms",
                                 at=datetime.now(UTC))
    finally:
        await app.close()


def _env(tmp_path: Path, proxy: RecordingProxy, **extra: str) -> dict[str, str]:
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=f"{proxy.base_url}/v1",
                    VALET_LLM_MODEL="smollm2", VALET_LLM_API_KEY="none", **extra)
    del env["VALET_TOOL_EXPOSURE"]  # the tools a deployment offers: the capability router's
    return env


async def test_a_telegram_conversation_in_the_models_own_template(llamacpp_own: LlamaServer,
                                                                  tmp_path):
    """The server drops the tools (its template has none): the model only chats."""
    said = ["hi", "what is six times seven?", "save a note: buy milk"]
    async with RecordingProxy(llamacpp_own.base_url) as proxy, FakeTelegram() as tg:
        env = _env(tmp_path, proxy, VALET_TELEGRAM_TOKEN=TOKEN,
                   VALET_TELEGRAM_API_URL=tg.api_url)
        (tmp_path / "valet.yaml").write_text(
            SETTINGS + f"owner:\n  telegram_ids: ['{OWNER_CHAT}']\n")
        serve = await start_serve(env, tmp_path / "serve.log")
        turns: list[Turn] = []
        try:
            for i, text in enumerate(said, 1):
                before, asked = len(tg.sent(OWNER_CHAT)), len(proxy.exchanges)
                tg.user_says(OWNER_CHAT, text)
                seconds = await answered(tmp_path / "valet.db", i, f"an answer to {text!r}")
                await tg.wait_for(lambda n=before: len(tg.sent(OWNER_CHAT)) > n, timeout=30)
                shown = [t for m in tg.sent(OWNER_CHAT)[before:] for t in (*m.edits, m.text)]
                turns.append(Turn(text, seconds, shown, proxy.exchanges[asked:]))
        except BaseException:
            await stop_serve(serve)
            raise
        conversation, _, out = await after_the_conversation(serve, proxy, env)
    check_story("own template (Telegram)", turns, proxy, conversation, out)
    assert not any(m.buttons for m in tg.sent(OWNER_CHAT)), "a card, though no tool can run"
    assert not any(e.calls for e in conversation)
    # The doctor says what the conversation showed: no tools, and why (the server drops
    # them: its template has none).
    assert "does not call tools" in out and "supports_tools: false" in out, out


async def test_an_sms_conversation_with_a_tool_template(llamacpp_tools: LlamaServer, tmp_path):
    """The server parses calls into native tool_calls; sending an email needs a card."""
    actions = tmp_path / "actions.jsonl"
    registry = tmp_path / "risky.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [send_email]\n"
                        f"    approval: always\n    settings: {{log: {actions}}}\n")
    (tmp_path / "persona.yaml").write_text(PERSONA)
    said = ["hi", "email ann@example.com that I am late", "2"]
    async with RecordingProxy(llamacpp_tools.base_url) as proxy, FakeTwilio() as twilio, \
            aiohttp.ClientSession() as http:
        env = _env(tmp_path, proxy, VALET_AGENTS_FILES=str(registry),
                   VALET_PERSONA=str(tmp_path / "persona.yaml"), VALET_PUBLIC_URL=PUBLIC,
                   VALET_SMS_FROM_NUMBER="+15005550006",
                   VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                   VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                   VALET_TWILIO_API_URL=twilio.base_url)
        (tmp_path / "valet.yaml").write_text(SETTINGS + f"owner:\n  phone_numbers: ['{ALICE}']\n")
        await seed_an_earlier_email(tmp_path, env)
        serve = await start_serve(env, tmp_path / "serve.log")
        url = env["VALET_HTTP_PORT"]
        turns: list[Turn] = []
        cards = 0
        try:
            for i, text in enumerate(said, 1):
                if text == "2" and not cards:
                    continue  # no card to answer: the model asked for nothing
                before, asked = len(twilio.sent), len(proxy.exchanges)
                params = inbound_params(ALICE, text, sid=f"SM{i}")
                started = time.monotonic()
                async with await post_signed(http, f"http://127.0.0.1:{url}/sms/inbound",
                                             PUBLIC + "/sms/inbound", params,
                                             twilio.auth_token) as resp:
                    assert resp.status == 200
                await answered(tmp_path / "valet.db", i, f"an answer to {text!r}")
                await twilio.wait_for(before + 1, timeout=30)
                shown = [m.body for m in twilio.sent[before:]]
                cards += sum("Reply 1" in body for body in shown)
                turns.append(Turn(text, time.monotonic() - started, shown,
                                  proxy.exchanges[asked:]))
        except BaseException:
            await stop_serve(serve)
            raise
        conversation, code, out = await after_the_conversation(serve, proxy, env)
    check_story("tool template (SMS)", turns, proxy, conversation, out)
    # Nothing changed without a card (the card was never approved: nothing at all), and a
    # card for every change the model asked for.
    assert not actions.exists(), actions.read_text()
    asked_to_send = [e for e in conversation if "send_email" in e.calls]
    assert bool(asked_to_send) == bool(cards), (cards, [e.calls for e in conversation])
    # The doctor says what the conversation showed: the server takes the tools (its template
    # has them), native calls when the model made them, a wrong template only when the
    # model's answers showed its tokens.
    assert "drops the tools" not in out, out
    if any(e.calls for e in conversation):
        assert "does not call tools" not in out, out
    if "wrong chat template" in out:
        assert any(wrong_template(e.content) for e in conversation), out
    print(json.dumps({"doctor_exit": code,
                      "doctor_problems": [line for line in out.splitlines() if "FAIL" in line]}))
