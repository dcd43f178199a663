"""`valet onboard` in a real pseudo-terminal (pexpect), against the fake LLM, Telegram and
Twilio: an onboarding that can be left. Every step can be skipped or gone back from; the SMS
step is never a dead end (a number not on the account, a Messaging Service Twilio does not
know: skip, back or Enter leave it); Ctrl-C at the last step keeps the steps confirmed, and
the next run offers them; the owner found by their /start is the default name."""

from __future__ import annotations

import io
import stat
import sys

import pexpect
import pytest
import yaml

from bot.config.env_file import read_env_file
from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio
from tests.ports import free_port


@pytest.fixture
async def fakes(fake_llm: FakeOpenAI):
    fake_llm.responder = lambda body: Reply(content="ready")
    async with FakeTelegram() as tg, FakeTwilio() as twilio:
        yield fake_llm, tg, twilio


def _terminal(env: dict[str, str], *args: str) -> pexpect.spawn:
    child = pexpect.spawn(sys.executable, ["-m", "bot", "onboard", *args],
                          env={**env, "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"},
                          cwd=str(ROOT), encoding="utf-8", dimensions=(40, 200), timeout=30)
    child.logfile_read = io.StringIO()
    return child


async def _answer(child: pexpect.spawn, steps: list[tuple[str, str]]) -> None:
    for prompt, answer in steps:
        await child.expect_exact(prompt, async_=True)
        child.send(answer + "\r")


async def _end(child: pexpect.spawn) -> tuple[int, str]:
    await child.expect(pexpect.EOF, async_=True)
    child.close()
    shown = child.logfile_read.getvalue()
    status = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return status, shown


def _env(tmp_path, tg: FakeTelegram, twilio: FakeTwilio, **extra: str) -> dict[str, str]:
    env = clean_env(tmp_path, VALET_TELEGRAM_API_URL=tg.api_url,
                    VALET_TWILIO_API_URL=twilio.base_url, **extra)
    env.pop("VALET_TOOL_EXPOSURE")
    return env


LLM_STEP = [("API key", ""), ("Model [fake-model]", "")]


async def test_sms_skipped_after_its_sid_and_token_were_accepted(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    twilio.services.clear()
    child = _terminal(_env(tmp_path, tg, twilio))
    await _answer(child, [
        ("LLM endpoint", fake_llm.base_url), *LLM_STEP, ("Bot token", ""),
        ("Account SID", twilio.account_sid), ("Auth Token", twilio.auth_token),
        ("Valet's Twilio number", "+15005550009"),  # not a number of this account
        ("is not a number of this Twilio account", "MG" + "1" * 32),  # nor is this a service
        ("Twilio does not know the Messaging Service", "back"),  # the SMS step again
        ("Account SID", twilio.account_sid), ("Auth Token", twilio.auth_token),
        ("Valet's Twilio number", "skip"),
        ("Public https address", ""), ("Your timezone", "Europe/Paris"),
        ("What should Valet call you [owner]", "Sam")])
    status, shown = await _end(child)
    assert status == 0, shown
    assert "skipped: nothing of this step changes" in shown
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert "sms" not in config and config["owner"] == {"name": "Sam"}
    written = read_env_file(tmp_path / "valet.env")
    assert "VALET_TWILIO_ACCOUNT_SID" not in written and "VALET_TWILIO_AUTH_TOKEN" not in written
    assert twilio.auth_token not in shown


async def test_enter_at_the_sender_leaves_sms_out(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    child = _terminal(_env(tmp_path, tg, twilio))
    await _answer(child, [
        ("LLM endpoint", fake_llm.base_url), *LLM_STEP, ("Bot token", ""),
        ("Account SID", twilio.account_sid), ("Auth Token", twilio.auth_token),
        ("Enter leaves SMS out", ""),
        ("Public https address", ""), ("Your timezone", "UTC"),
        ("What should Valet call you", "")])
    status, shown = await _end(child)
    assert status == 0, shown
    assert "sms" not in yaml.safe_load((tmp_path / "valet.yaml").read_text())


async def test_back_goes_to_the_step_before_and_skip_leaves_one_out(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    child = _terminal(_env(tmp_path, tg, twilio))
    await _answer(child, [
        ("LLM endpoint", f"http://127.0.0.1:{free_port()}/v1"),  # refused: asked again
        ("cannot reach an LLM", fake_llm.base_url), ("API key", ""),
        ("Model [fake-model]", "back"),  # the LLM step again, from its start
        ("LLM endpoint", fake_llm.base_url), *LLM_STEP,
        ("Bot token", "back"),  # the first question of Telegram: back to the LLM step
        ("LLM endpoint", fake_llm.base_url), *LLM_STEP,
        ("Bot token", "skip"), ("Account SID", "skip"), ("Public https address", "skip"),
        ("Your timezone", "Europe/Paris"), ("What should Valet call you", "Sam")])
    status, shown = await _end(child)
    assert status == 0, shown
    assert shown.count("2. Telegram") == 2 and shown.count("1. The LLM") == 3
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config["llm"] == {"base_url": fake_llm.base_url, "model": "fake-model"}
    assert "telegram" not in config and "public_url" not in config


async def test_ctrl_c_at_the_last_step_keeps_what_was_confirmed_and_offers_it_again(
        fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    env = _env(tmp_path, tg, twilio)
    tg.user_says(4242, "/start")  # the owner's /start, which onboard waits for
    child = _terminal(env)
    await _answer(child, [
        ("LLM endpoint", fake_llm.base_url), ("API key", "sk-typed-KEY"), ("Model", ""),
        ("Bot token", TOKEN), ("polling (no public address needed) or webhook", ""),
        ("Account SID", ""), ("Public https address", "https://valet.example.com")])
    await child.expect_exact("Your timezone", async_=True)
    child.sendintr()  # Ctrl-C at the last step
    status, shown = await _end(child)
    assert status == 130, shown
    assert "the 5 step(s) confirmed are written to" in shown  # WhatsApp skipped, confirmed
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config["llm"] == {"base_url": fake_llm.base_url, "model": "fake-model"}
    assert config["owner"] == {"telegram_ids": ["4242"]}  # the step under way: nothing of it
    assert config["public_url"] == "https://valet.example.com" and "timezone" not in config
    written = read_env_file(tmp_path / "valet.env")
    assert written["VALET_LLM_API_KEY"] == "sk-typed-KEY" and written["VALET_TELEGRAM_TOKEN"] \
        == TOKEN
    assert stat.S_IMODE((tmp_path / "valet.env").stat().st_mode) == 0o600
    assert "VALET_SECRET_KEY" not in written  # made only when onboard finishes

    # The next run offers each confirmed step to keep (Enter), then asks the last one.
    child = _terminal(env)
    await _answer(child, [
        (f"Set up: fake-model at {fake_llm.base_url}. Keep it as it is? [Y/n]", ""),
        ("Set up: a bot token (polling, the owner's id 4242). Keep it as it is? [Y/n]", ""),
        ("Account SID", ""),  # SMS was left out: asked again
        ("Set up: https://valet.example.com. Keep it as it is? [Y/n]", ""),
        ("Your timezone", "Europe/Paris"), ("What should Valet call you [owner]", "Sam")])
    status, shown = await _end(child)
    assert status in (0, 1), shown  # doctor's verdict on the fakes; never a traceback
    # The kept step is not asked again (doctor's own "LLM endpoint: ..." line may show).
    assert "Traceback" not in shown and "LLM endpoint (base URL" not in shown
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config["llm"]["model"] == "fake-model" and config["timezone"] == "Europe/Paris"
    assert config["owner"] == {"telegram_ids": ["4242"], "name": "Sam"}
    assert "VALET_SECRET_KEY" in read_env_file(tmp_path / "valet.env")


async def test_the_owner_found_by_start_is_the_default_name(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    tg.user_says(4242, "/start")  # from Alice
    child = _terminal(_env(tmp_path, tg, twilio))
    await _answer(child, [
        ("LLM endpoint", fake_llm.base_url), *LLM_STEP,
        ("Bot token", TOKEN), ("polling (no public address needed) or webhook", ""),
        ("Account SID", ""), ("Public https address", ""), ("Your timezone", "UTC"),
        ("What should Valet call you [Alice]", "")])
    status, shown = await _end(child)
    assert "ok: the owner is Alice (Telegram id 4242)" in shown
    assert yaml.safe_load((tmp_path / "valet.yaml").read_text())["owner"]["name"] == "Alice"
    assert status in (0, 1) and "Traceback" not in shown, shown

