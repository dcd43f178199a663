"""`valet onboard --yes` as a script runs it, against the fake LLM, the fake Telegram and the
fake Twilio (through the real openai, python-telegram-bot and twilio clients): a working
valet.yaml and env file (0600) that the next `valet` loads; a bad token, bad credentials or
an unreachable LLM stop with one clear line and write nothing; run again, it edits."""

from __future__ import annotations

import stat

import pytest
import yaml

from bot.config.env_file import read_env_file
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import DEFAULT_NUMBER, FakeTwilio
from tests.ports import free_port

PUBLIC = "https://valet.example.com"
OWNER_PHONE = "+12125550123"


@pytest.fixture
async def fakes(fake_llm: FakeOpenAI):
    # A model that calls tools: the probe offering one gets a call (bot.llm.probe).
    fake_llm.responder = lambda body: Reply(tool_calls=[ToolCall("multiply", {"a": 6, "b": 7})]) \
        if body.get("tools") else Reply(content="ready")
    async with FakeTelegram() as tg, FakeTwilio() as twilio:
        yield fake_llm, tg, twilio


def onboard_env(tmp_path, tg: FakeTelegram, twilio: FakeTwilio, **extra: str) -> dict[str, str]:
    env = clean_env(tmp_path, **{
        "VALET_LLM_API_KEY": "sk-test-KEY", "VALET_TELEGRAM_TOKEN": TOKEN,
        "VALET_TELEGRAM_API_URL": tg.api_url, "VALET_TWILIO_ACCOUNT_SID": twilio.account_sid,
        "VALET_TWILIO_AUTH_TOKEN": twilio.auth_token, "VALET_TWILIO_API_URL": twilio.base_url,
        **extra})
    env.pop("VALET_TOOL_EXPOSURE")
    return env


def flags(fake_llm: FakeOpenAI, *more: str) -> list[str]:
    return ["onboard", "--yes", "--llm-base-url", fake_llm.base_url, "--llm-model",
            "fake-model", "--sms-from", DEFAULT_NUMBER, "--owner-phone", OWNER_PHONE,
            "--public-url", PUBLIC, "--timezone", "America/New_York", "--owner-name", "Sam",
            *more]


async def test_onboard_writes_a_working_configuration_and_ends_with_doctor(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    tg.user_says(4242, "/start")  # the owner, found by their /start
    env = onboard_env(tmp_path, tg, twilio)
    code, out, err = await run_valet(flags(fake_llm, "--wait-for-owner", "20"), env)
    assert code == 0, out + err
    assert "ok: the bot is @valet_test_bot" in out
    assert "ok: the owner is Alice (Telegram id 4242)" in out
    assert f"ok: Twilio posts {DEFAULT_NUMBER}'s messages to {PUBLIC}/sms/inbound" in out
    assert out.rstrip().endswith("Ready: `valet serve` runs Valet (and `valet chat` talks to "
                                 "it from here).")
    for secret in ("sk-test-KEY", TOKEN, twilio.auth_token):
        assert secret not in out + err

    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config == {
        "memory": {"enabled": False},  # what was there stays
        "llm": {"base_url": fake_llm.base_url, "model": "fake-model"},
        "telegram": {"mode": "polling"}, "sms": {"from_number": DEFAULT_NUMBER},
        "public_url": PUBLIC, "timezone": "America/New_York",
        "owner": {"name": "Sam", "telegram_ids": ["4242"], "phone_numbers": [OWNER_PHONE]}}
    env_file = tmp_path / "valet.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    written = read_env_file(env_file)
    assert written["VALET_LLM_API_KEY"] == "sk-test-KEY"
    assert written["VALET_TELEGRAM_TOKEN"] == TOKEN
    assert written["VALET_TWILIO_AUTH_TOKEN"] == twilio.auth_token
    assert len(written["VALET_SECRET_KEY"]) == 44 and len(written["VALET_EVENTS_TOKEN"]) == 64
    assert twilio.numbers[DEFAULT_NUMBER]["sms_url"] == f"{PUBLIC}/sms/inbound"
    assert {c["command"] for c in tg.commands} >= {"start", "help"}  # doctor --fix set it

    # The next `valet` reads its secrets from the env file alone.
    bare = {k: v for k, v in env.items() if k not in written}
    code, out, err = await run_valet(["doctor"], bare)
    assert code == 0, out + err
    assert "  ok    Telegram bot @valet_test_bot (polling)" in out
    assert "  ok    VALET_SECRET_KEY set" in out

    # Run again: it edits what is there (the owner and the generated secrets stay).
    code, out, err = await run_valet(flags(fake_llm)[:-4] + ["--owner-name", "Samantha"], bare)
    assert code == 0, out + err
    again = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert again["owner"] == {"name": "Samantha", "telegram_ids": ["4242"],
                              "phone_numbers": [OWNER_PHONE]}
    assert read_env_file(env_file)["VALET_SECRET_KEY"] == written["VALET_SECRET_KEY"]


async def _stopped(tmp_path, args: list[str], env: dict[str, str]) -> str:
    before = (tmp_path / "valet.yaml").read_text()
    code, out, err = await run_valet(args, env)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert (tmp_path / "valet.yaml").read_text() == before  # nothing written
    assert not (tmp_path / "valet.env").exists()
    return lines[0]


async def test_a_bad_telegram_token_stops_with_one_line(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    env = onboard_env(tmp_path, tg, twilio, VALET_TELEGRAM_TOKEN="999:not-a-token")
    line = await _stopped(tmp_path, flags(fake_llm), env)
    assert line == ("valet onboard: Telegram refused the bot token: check VALET_TELEGRAM_TOKEN "
                    "(the token @BotFather gave you, /mybots > API Token)")


async def test_bad_twilio_credentials_stop_with_one_line(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    env = onboard_env(tmp_path, tg, twilio, VALET_TWILIO_AUTH_TOKEN="wrong")
    line = await _stopped(tmp_path, flags(fake_llm), env)
    assert line == ("valet onboard: Twilio refused the credentials (error 20003): check "
                    "VALET_TWILIO_ACCOUNT_SID and VALET_TWILIO_AUTH_TOKEN (Twilio console, "
                    "Account info)")


async def test_an_unreachable_llm_stops_with_one_line(fakes, tmp_path):
    _, tg, twilio = fakes
    url = f"http://127.0.0.1:{free_port()}/v1"
    args = ["onboard", "--yes", "--llm-base-url", url, "--llm-model", "m"]
    line = await _stopped(tmp_path, args, onboard_env(tmp_path, tg, twilio))
    assert line.startswith(f"valet onboard: cannot reach an LLM at {url} (")
    assert line.endswith("): is the server running, and the URL right?")


async def test_a_missing_answer_names_its_flag(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    args = ["onboard", "--yes", "--llm-base-url", fake_llm.base_url, "--llm-model",
            "fake-model", "--no-telegram"]
    line = await _stopped(tmp_path, args, onboard_env(tmp_path, tg, twilio))
    assert line == ("valet onboard: Valet's Twilio number (E.164, e.g. +15551234567) or "
                    "Messaging Service SID (MG...): give --sms-from")


async def test_in_a_terminal_it_asks_each_step_and_asks_again_after_a_refusal(fakes,
                                                                            tmp_path):
    import io
    import sys

    import pexpect

    from tests.e2e.test_console_pipe import ROOT

    fake_llm, _, _ = fakes
    env = {**clean_env(tmp_path), "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "bot", "onboard"], env=env, cwd=str(ROOT),
                          encoding="utf-8", dimensions=(40, 160), timeout=30)
    child.logfile_read = io.StringIO()
    steps = [("LLM endpoint", fake_llm.base_url), ("API key", ""),
             ("Model [fake-model]", ""), ("Bot token", ""), ("Account SID", ""),
             ("Public https address", ""), ("Your timezone", "Mars/Base"),
             ("is not a timezone Valet knows", "Europe/Paris"),
             ("What should Valet call you [owner]", "Sam")]
    for prompt, answer in steps:
        await child.expect_exact(prompt, async_=True)
        child.send(answer + "\r")
    await child.expect(pexpect.EOF, async_=True)
    child.close()
    shown = child.logfile_read.getvalue()
    assert child.exitstatus == 0, shown
    assert "models offered: fake-model" in shown and "all good" in shown
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config["timezone"] == "Europe/Paris" and config["owner"] == {"name": "Sam"}
    assert config["llm"] == {"base_url": fake_llm.base_url, "model": "fake-model"}
    assert "VALET_SECRET_KEY" in read_env_file(tmp_path / "valet.env")


@pytest.mark.parametrize("how", ["--config", "VALET_CONFIG"])
async def test_a_configuration_file_that_does_not_exist_yet_is_created(fakes, tmp_path, how):
    fake_llm, tg, twilio = fakes
    target = tmp_path / "new" / "place" / "valet.yaml"
    env = {k: v for k, v in onboard_env(tmp_path, tg, twilio).items()
           if not k.startswith(("VALET_TELEGRAM", "VALET_TWILIO"))}
    args = flags(fake_llm, "--no-telegram", "--no-sms")
    args = [a for a in args if a not in ("--sms-from", DEFAULT_NUMBER, "--owner-phone",
                                         OWNER_PHONE)]
    if how == "--config":
        del env["VALET_CONFIG"]
        args += ["--config", str(target)]
    else:
        env["VALET_CONFIG"] = str(target)
    code, out, err = await run_valet(args, env)
    assert code == 0, out + err
    config = yaml.safe_load(target.read_text())
    assert config["llm"]["model"] == "fake-model" and config["owner"] == {"name": "Sam"}
    env_file = target.parent / "valet.env"  # beside the configuration, readable by its owner
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert "VALET_SECRET_KEY" in read_env_file(env_file)


@pytest.mark.parametrize("status", [502, 404])
async def test_onboards_last_step_reports_a_failing_bot_api_method_and_ends(fakes, tmp_path,
                                                                           status):
    fake_llm, tg, twilio = fakes
    tg.fail_next("getMyCommands", status,
                 description="Bad Gateway" if status == 502 else "Not Found")
    code, out, err = await run_valet(flags(fake_llm), onboard_env(tmp_path, tg, twilio))
    assert code == 1, out + err
    assert "Traceback" not in out + err
    assert "  FAIL  Telegram refused getMyCommands: " in out
    for later in ("  ok    Twilio account 'Test account'", "  ok    public URL ",
                  "  ok    VALET_EVENTS_TOKEN set"):
        assert later in out, later  # the checks after the failing one still ran
    assert out.rstrip().endswith("(or `valet onboard` again: Enter keeps each answer).")
    assert yaml.safe_load((tmp_path / "valet.yaml").read_text())["llm"]["model"] == "fake-model"


@pytest.mark.parametrize("status", [502, 404])
async def test_twilio_refusing_to_point_the_webhook_is_a_next_step_not_a_stop(fakes, tmp_path,
                                                                             status):
    fake_llm, tg, twilio = fakes
    twilio.fail_call("update_number", status, None if status == 502 else 20404)
    code, out, err = await run_valet(flags(fake_llm), onboard_env(tmp_path, tg, twilio))
    assert "Traceback" not in out + err
    assert f"next: In the Twilio console, set {DEFAULT_NUMBER}'s 'A message comes in' to " \
           f"Webhook, HTTP POST, {PUBLIC}/sms/inbound" in out
    assert yaml.safe_load((tmp_path / "valet.yaml").read_text())["sms"] == {
        "from_number": DEFAULT_NUMBER}  # the rest is written
    assert code == 1  # doctor at the end says the webhook is not set yet
    assert f"{DEFAULT_NUMBER}'s incoming SMS webhook is not set" in out
