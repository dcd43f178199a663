"""`valet doctor` never crashes: each Bot API method and each Twilio call it makes answers 502
(a gateway error) or 404 in turn, against the fake Telegram and the fake Twilio through the
real python-telegram-bot and twilio clients. Every time the failure is one FAIL line naming
what failed, every other check is still reported, and the exit status is 1; an answer the
client cannot read at all (not an error Valet knows) is a FAIL line naming the check."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.cli.doctor import run_doctor
from bot.cli.doctor_setup import Report
from bot.config import load_settings
from bot.credentials import new_key
from tests.fakes.fake_openai import Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import DEFAULT_NUMBER, FakeTwilio

PUBLIC = "https://valet.example.com"
EVENTS_TOKEN = "e" * 32
SERVICE = "MG" + "1" * 32


@pytest.fixture
async def services() -> AsyncIterator[tuple[FakeTelegram, FakeTwilio]]:
    async with FakeTelegram() as tg, FakeTwilio() as twilio:
        twilio.numbers[DEFAULT_NUMBER]["sms_url"] = f"{PUBLIC}/sms/inbound"
        twilio.services[SERVICE] = "Valet"
        yield tg, twilio


async def _doctor(tmp_path, fake_llm, tg: FakeTelegram, twilio: FakeTwilio, *,
                  mode: str = "polling", fix: bool = False, sender: str = DEFAULT_NUMBER
                  ) -> tuple[int, list[str]]:
    config = tmp_path / "valet.yaml"
    # A Messaging Service has no number of its own: the countries SMS may go to are named
    # (sms.allowed_countries), as doctor asks of such a set-up.
    config.write_text(f"memory:\n  enabled: false\ntelegram:\n  mode: {mode}\n"
                      "owner:\n  telegram_ids: ['42']\nsms:\n  allowed_countries: [US]\n")
    sms = {"VALET_SMS_MESSAGING_SERVICE_SID": sender} if sender.startswith("MG") else \
        {"VALET_SMS_FROM_NUMBER": sender}
    env = {"VALET_DATABASE_URL": f"sqlite:///{tmp_path}/valet.db",
           "VALET_LLM_BASE_URL": fake_llm.base_url, "VALET_LLM_MODEL": "fake-model",
           "VALET_SECRET_KEY": new_key(), "VALET_EVENTS_TOKEN": EVENTS_TOKEN,
           "VALET_PUBLIC_URL": PUBLIC, "VALET_TELEGRAM_TOKEN": TOKEN,
           "VALET_TELEGRAM_API_URL": tg.api_url,
           "VALET_TELEGRAM_WEBHOOK_SECRET": "s3cret-Token_1",
           "VALET_TWILIO_ACCOUNT_SID": twilio.account_sid,
           "VALET_TWILIO_AUTH_TOKEN": twilio.auth_token,
           "VALET_TWILIO_API_URL": twilio.base_url, **sms}
    fake_llm.responder = lambda body: Reply(content="ready")  # every request doctor makes
    lines: list[str] = []
    code = await run_doctor(load_settings(str(config), env=env), lines.append, fix=fix,
                            env=env)
    return code, lines


def _failures(lines: list[str]) -> list[str]:
    return [line.removeprefix("  FAIL  ") for line in lines if line.startswith("  FAIL")]


def _the_rest_was_reported(lines: list[str], *, skip: str) -> None:
    """Every check other than the one that failed still has its line."""
    expected = {
        # (not created yet: a stand-in is read; --fix creates it)
        "database": ("  note  database sqlite:///", "  ok    database sqlite:///",
                     "  fixed applied "),
        "LLM": "  ok    LLM fake-model at ",
        "telegram": "  ok    Telegram bot @valet_test_bot",
        "twilio account": "  ok    Twilio account 'Test account'",
        "twilio sender": ("  ok    Twilio number", "  ok    Twilio Messaging Service"),
        "public URL": f"  ok    public URL {PUBLIC}",
        "events token": "  ok    VALET_EVENTS_TOKEN set",
        "owner": "  ok    owner ",
    }
    for name, start in expected.items():
        if name != skip:
            assert any(line.startswith(start) for line in lines), (name, lines)
    assert lines[-1].endswith("problem(s) found"), lines


# (method, mode, fix): every Bot API call doctor makes, in the set-up that makes it.
BOT_API_CALLS = [("getMe", "polling", False), ("getWebhookInfo", "polling", False),
                 ("getMyCommands", "polling", False), ("setMyCommands", "polling", True),
                 ("deleteWebhook", "polling", True), ("getWebhookInfo", "webhook", False),
                 ("setWebhook", "webhook", True)]


@pytest.mark.parametrize("status", [502, 404])
@pytest.mark.parametrize(("method", "mode", "fix"), BOT_API_CALLS)
async def test_a_failing_bot_api_method_is_one_fail_line_and_the_rest_is_checked(
        tmp_path, fake_llm, services, method, mode, fix, status):
    tg, twilio = services
    if method == "deleteWebhook":  # only called to remove a webhook left set in polling
        tg.webhook = {"url": "https://old.example.com/telegram/webhook", "secret_token": None}
    tg.fail_next(method, status, description="Bad Gateway" if status == 502 else "Not Found")
    code, lines = await _doctor(tmp_path, fake_llm, tg, twilio, mode=mode, fix=fix)
    assert code == 1, lines
    assert tg.called(method), f"{method} was never called: the test tests nothing"
    [failure] = _failures(lines)
    if method == "getMe" and status == 404:  # Telegram's answer to a refused token
        assert failure.startswith("Telegram refused the bot token")
    elif method == "getMe":
        assert failure == "cannot reach Telegram: NetworkError: Bad Gateway"
    else:
        assert failure.startswith(f"Telegram refused {method}: "), failure
        assert failure.endswith("Bad Gateway" if status == 502 else "Not Found"), failure
    assert TOKEN not in "\n".join(lines) and "Traceback" not in "\n".join(lines)
    _the_rest_was_reported(lines, skip="telegram" if method == "getMe" else "")


@pytest.mark.parametrize("status", [502, 404])
@pytest.mark.parametrize(("call", "sender"), [("account", DEFAULT_NUMBER),
                                              ("numbers", DEFAULT_NUMBER),
                                              ("service", SERVICE)])
async def test_a_failing_twilio_call_is_one_fail_line_and_the_rest_is_checked(
        tmp_path, fake_llm, services, call, sender, status):
    tg, twilio = services
    tg.commands = [{"command": "start", "description": "x"}]
    twilio.fail_call(call, status, None if status == 502 else 20404)
    code, lines = await _doctor(tmp_path, fake_llm, tg, twilio, sender=sender)
    assert code == 1, lines
    [failure] = _failures(lines)
    if status == 502:
        assert failure == "cannot reach Twilio: Twilio answered HTTP 502"
    else:
        assert failure.startswith("Twilio does not know ") and failure.endswith("(error 20404)")
    assert twilio.auth_token not in "\n".join(lines)
    _the_rest_was_reported(lines, skip="twilio account" if call == "account" else
                           "twilio sender")


async def test_an_answer_nobody_expected_fails_its_check_only(tmp_path, fake_llm, services):
    tg, twilio = services
    tg.commands = [{"command": "start", "description": "x"}]
    tg.garble_next("getWebhookInfo")  # ok, but a result python-telegram-bot cannot read
    code, lines = await _doctor(tmp_path, fake_llm, tg, twilio)
    assert code == 1
    [failure] = _failures(lines)
    assert failure.startswith("Telegram webhook: the check could not finish: "), failure
    _the_rest_was_reported(lines, skip="")


async def test_a_check_that_raises_is_named_and_counted_and_secrets_are_masked():
    lines: list[str] = []
    report = Report.of(lines.append, {"VALET_TELEGRAM_TOKEN": "123:very-secret-value"})

    def broken() -> None:
        raise RuntimeError("lookup of 123:very-secret-value failed")

    assert not await report.guarded("Telegram", broken)
    assert await report.guarded("after it", lambda: report.ok("still checked"))
    assert lines == ["  FAIL  Telegram: the check could not finish: RuntimeError: lookup of "
                     "*** failed", "  ok    still checked"]
    assert report.problems == 1
