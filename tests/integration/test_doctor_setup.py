"""`valet doctor` checks every configured part as its service sees it (the fake Telegram and
the fake Twilio, through the real python-telegram-bot and twilio clients): each
misconfiguration is one FAIL line saying what to do, and exit 1; `--fix` makes the safe
repairs and says so."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.cli.doctor import run_doctor
from bot.credentials import new_key
from channels.registry import load_channel_settings
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import DEFAULT_NUMBER, FakeTwilio

PUBLIC = "https://valet.example.com"
GOOD_TOKEN = "e" * 32


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def twilio() -> AsyncIterator[FakeTwilio]:
    async with FakeTwilio() as fake:
        yield fake


@pytest.fixture
def doctor(tmp_path, fake_llm):
    async def run(yaml: str = "", *, fix: bool = False, **env: str) -> tuple[int, list[str]]:
        config = tmp_path / "valet.yaml"
        config.write_text("memory:\n  enabled: false\n" + yaml)
        full = {"VALET_DATABASE_URL": f"sqlite:///{tmp_path}/valet.db",
                "VALET_LLM_BASE_URL": fake_llm.base_url, "VALET_LLM_MODEL": "fake-model",
                "VALET_SECRET_KEY": new_key(), "VALET_EVENTS_TOKEN": GOOD_TOKEN, **env}
        settings = load_channel_settings(str(config), env=full)
        fake_llm.responder = lambda body: Reply(content="ready")  # every request doctor makes
        lines: list[str] = []
        code = await run_doctor(settings, lines.append, fix=fix, env=full)
        return code, lines

    return run


def failures(lines: list[str]) -> list[str]:
    return [line.removeprefix("  FAIL  ") for line in lines if line.startswith("  FAIL")]


def telegram_env(tg: FakeTelegram, **extra: str) -> dict[str, str]:
    return {"VALET_TELEGRAM_TOKEN": TOKEN, "VALET_TELEGRAM_API_URL": tg.api_url, **extra}


def twilio_env(twilio: FakeTwilio, **extra: str) -> dict[str, str]:
    return {"VALET_TWILIO_ACCOUNT_SID": twilio.account_sid,
            "VALET_TWILIO_AUTH_TOKEN": twilio.auth_token,
            "VALET_TWILIO_API_URL": twilio.base_url, **extra}


async def test_a_healthy_telegram_and_sms_set_up_is_all_good(doctor, tg, twilio):
    twilio.numbers[DEFAULT_NUMBER]["sms_url"] = f"{PUBLIC}/sms/inbound"
    tg.commands = [{"command": c, "description": "x"} for c in
                   ("start", "help", "pending", "cancel", "stop", "link", "whoami")]
    code, lines = await doctor("owner:\n  telegram_ids: ['42']\n", **telegram_env(tg),
                               **twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC,
                                            VALET_SMS_FROM_NUMBER=DEFAULT_NUMBER))
    assert code == 0, lines
    assert "  ok    Telegram bot @valet_test_bot (polling)" in lines
    assert "  ok    Twilio account 'Test account'" in lines
    assert f"  ok    Twilio number {DEFAULT_NUMBER} sends SMS" in lines
    assert f"  ok    public URL {PUBLIC}" in lines
    assert lines[-1] == "all good"
    assert TOKEN not in "\n".join(lines) and twilio.auth_token not in "\n".join(lines)


async def test_sms_without_a_public_url_is_a_problem_not_all_good(doctor, twilio):
    code, lines = await doctor(**twilio_env(twilio, VALET_SMS_FROM_NUMBER=DEFAULT_NUMBER))
    assert code == 1
    assert failures(lines) == [
        "SMS need(s) a public https address: set VALET_PUBLIC_URL (or public_url) to where "
        "this server is reached, e.g. https://valet.example.com"]
    assert lines[-1] == "1 problem(s) found"


async def test_a_bad_telegram_token_is_named_and_never_shown(doctor, tg):
    code, lines = await doctor(**telegram_env(tg, VALET_TELEGRAM_TOKEN="999:wrong-token"))
    assert code == 1
    assert failures(lines) == [
        "Telegram refused the bot token: check VALET_TELEGRAM_TOKEN (the token @BotFather gave "
        "you, /mybots > API Token)"]
    assert "wrong-token" not in "\n".join(lines)


async def test_bad_twilio_credentials_are_error_20003(doctor, twilio):
    env = twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER=DEFAULT_NUMBER)
    env["VALET_TWILIO_AUTH_TOKEN"] = "not-the-token"
    code, lines = await doctor(**env)
    assert code == 1
    assert failures(lines) == [
        "Twilio refused the credentials (error 20003): check VALET_TWILIO_ACCOUNT_SID and "
        "VALET_TWILIO_AUTH_TOKEN (Twilio console, Account info)"]


async def test_a_number_of_another_account_or_without_sms_or_webhook(doctor, twilio):
    env = twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER="+15005550009")
    code, lines = await doctor(**env)
    assert code == 1 and failures(lines) == [
        "+15005550009 is not a number of this Twilio account: use one the account owns "
        "(Phone Numbers > Manage > Active numbers)"]
    twilio.numbers["+15005550009"] = {"sms": False, "sms_url": ""}
    code, lines = await doctor(**env)
    assert failures(lines) == ["+15005550009 cannot send SMS: choose an SMS-capable number"]
    twilio.numbers["+15005550009"] = {"sms": True, "sms_url": "https://old.example.com/sms"}
    code, lines = await doctor(**env)
    assert failures(lines) == [
        "+15005550009's incoming SMS webhook is https://old.example.com/sms, not "
        f"{PUBLIC}/sms/inbound: set it in the Twilio console (the number, Messaging, 'A "
        "message comes in': Webhook, HTTP POST)"]


async def test_a_messaging_service_is_looked_up(doctor, twilio):
    env = twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC,
                     VALET_SMS_MESSAGING_SERVICE_SID="MG" + "1" * 32)
    # No number of Valet's or the owner's says where SMS may go: the operator says so.
    yaml = "sms:\n  allowed_countries: [US]\n"
    code, lines = await doctor(yaml, **env)
    assert failures(lines) == [
        f"Twilio does not know the Messaging Service MG{'1' * 32} on this account (error "
        "20404)"]
    twilio.services["MG" + "1" * 32] = "Valet"
    code, lines = await doctor(yaml, **env)
    assert code == 0, lines
    assert "  ok    Twilio Messaging Service 'Valet'" in lines


async def test_webhook_mode_is_registered_by_fix_and_its_errors_are_reported(doctor, tg):
    yaml = "telegram:\n  mode: webhook\n"
    env = telegram_env(tg, VALET_PUBLIC_URL=PUBLIC,
                       VALET_TELEGRAM_WEBHOOK_SECRET="s3cret-Token_1")
    code, lines = await doctor(yaml, **env)
    assert code == 1 and failures(lines) == [
        f"Telegram's webhook is none, not {PUBLIC}/telegram/webhook: valet doctor --fix "
        "registers it (valet serve does at start too)"]
    assert not tg.called("setWebhook")

    code, lines = await doctor(yaml, fix=True, **env)
    assert code == 0, lines
    assert f"  fixed registered the webhook {PUBLIC}/telegram/webhook" in lines
    assert "  fixed set @valet_test_bot's command menu" in lines
    assert tg.webhook == {"url": f"{PUBLIC}/telegram/webhook", "secret_token": "s3cret-Token_1"}
    assert {c["command"] for c in tg.commands} >= {"start", "help", "stop"}

    tg.webhook_error = "Connection refused"
    code, lines = await doctor(yaml, **env)
    assert code == 1
    [failure] = failures(lines)
    assert failure.startswith("Telegram could not deliver to the webhook at ")
    assert failure.endswith(": Connection refused; check that the public URL reaches valet "
                            "serve over https (the proxy, the certificate)")


async def test_webhook_mode_without_its_secret_or_a_public_url(doctor, tg):
    code, lines = await doctor("telegram:\n  mode: webhook\n", **telegram_env(tg))
    assert code == 1
    assert failures(lines) == [
        "telegram.mode webhook needs VALET_TELEGRAM_WEBHOOK_SECRET: 1-256 characters of A-Z, "
        "a-z, 0-9, _ and -",
        "the Telegram webhook need(s) a public https address: set VALET_PUBLIC_URL (or "
        "public_url) to where this server is reached, e.g. https://valet.example.com"]


async def test_a_webhook_left_set_in_polling_mode_is_removed_by_fix(doctor, tg):
    tg.webhook = {"url": "https://old.example.com/telegram/webhook", "secret_token": None}
    code, lines = await doctor(**telegram_env(tg))
    assert code == 1 and failures(lines) == [
        "Telegram has a webhook set (https://old.example.com/telegram/webhook) but "
        "telegram.mode is polling: polling receives nothing while it is; valet doctor --fix "
        "removes it (or set telegram.mode: webhook)"]
    code, lines = await doctor(fix=True, **telegram_env(tg))
    assert code == 0, lines
    assert tg.webhook == {}


async def test_weak_events_token_and_malformed_secret_key(doctor):
    code, lines = await doctor(VALET_EVENTS_TOKEN="short", VALET_SECRET_KEY="my-password")
    assert code == 1
    found = failures(lines)
    assert ("VALET_EVENTS_TOKEN is 5 characters: use at least 16 random ones (openssl rand "
            "-hex 32)") in found
    assert any(f.startswith("VALET_SECRET_KEY: key 1 of 1 is not a Fernet key") for f in found)
    assert "my-password" not in "\n".join(lines)


async def test_fix_creates_the_data_directory_and_applies_migrations(doctor, tmp_path):
    url = f"sqlite:///{tmp_path}/data/valet.db"
    code, lines = await doctor(VALET_DATABASE_URL=url, VALET_DATA_DIR=str(tmp_path / "data"))
    assert code == 0, lines
    assert any(line.startswith(f"  note  data directory {tmp_path / 'data'} does not exist")
               for line in lines)
    code, lines = await doctor(fix=True, VALET_DATABASE_URL=url,
                               VALET_DATA_DIR=str(tmp_path / "data"))
    assert code == 0, lines
    assert f"  fixed created the data directory {tmp_path / 'data'}" in lines
    assert any(line.startswith("  fixed applied ") for line in lines)
    code, lines = await doctor(VALET_DATABASE_URL=url, VALET_DATA_DIR=str(tmp_path / "data"))
    assert not [line for line in lines if "fixed" in line or "migration(s) to apply" in line]
