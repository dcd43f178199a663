"""What a newcomer gets wrong, said by `valet doctor` and `valet onboard` (real processes,
the fake Telegram and LLM behind the real clients) in one line each, never a traceback:

- VALET_TELEGRAM_API_URL is the Bot API server's address, with or without the /bot Valet adds
  itself (both work); one that carries the token is refused before anything runs; one where
  no Bot API answers is said so, not blamed on the token;
- an LLM port nothing listens on is "nothing listens at host:port", not a timeout;
- with `log_level: INFO`, checking a database that does not exist yet prints no line per
  migration (the schema it is checked against is a stand-in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.e2e.test_onboard import fakes as fakes
from tests.e2e.test_onboard import flags, onboard_env
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.ports import free_port

BOT_OK = "  ok    Telegram bot @valet_test_bot (polling)"


@pytest.fixture
async def tg() -> FakeTelegram:
    async with FakeTelegram() as fake:
        yield fake


async def _doctor(tmp_path: Path, fake_llm: FakeOpenAI, **env: str) -> tuple[int, str, str]:
    fake_llm.responder = lambda body: Reply(content="ready")
    full = clean_env(tmp_path, **{"VALET_LLM_BASE_URL": fake_llm.base_url,
                                  "VALET_LLM_MODEL": "fake-model",
                                  "VALET_DATA_DIR": str(tmp_path / "data"), **env})
    return await run_valet(["doctor"], full)


def _telegram_lines(out: str) -> list[str]:
    return [line for line in out.splitlines()
            if line.startswith(("  ok", "  FAIL")) and ("Telegram" in line or "Bot API" in line)]


async def test_the_bot_api_address_works_with_its_bot(tmp_path, fake_llm, tg):
    """(Without it, every other test's; each form: tests/unit/test_telegram_api_url.py.)"""
    _, out, err = await _doctor(tmp_path, fake_llm, VALET_TELEGRAM_TOKEN=TOKEN,
                                VALET_TELEGRAM_API_URL=tg.api_url + "/bot/")
    assert BOT_OK in out.splitlines(), out + err
    assert "Traceback" not in out + err and "FAIL  Telegram" not in out


async def test_an_address_where_no_bot_api_answers_is_said_in_one_line(tmp_path, fake_llm, tg):
    code, out, err = await _doctor(tmp_path, fake_llm, VALET_TELEGRAM_TOKEN=TOKEN,
                                   VALET_TELEGRAM_API_URL=tg.api_url + "/not-the-bot-api")
    assert code == 1
    assert _telegram_lines(out) == [
        f"  FAIL  no Bot API server at {tg.api_url}/not-the-bot-api (getMe answered Not Found "
        "(404) and no Bot API JSON): check VALET_TELEGRAM_API_URL, the server's address "
        "alone, e.g. https://api.telegram.org (Valet adds /bot<token>)"]
    assert "Traceback" not in out + err and "refused the bot token" not in out
    assert TOKEN not in out + err


async def test_an_address_with_the_token_in_it_is_refused_before_anything_runs(
        tmp_path, fake_llm, tg):
    code, out, err = await _doctor(tmp_path, fake_llm, VALET_TELEGRAM_TOKEN=TOKEN,
                                   VALET_TELEGRAM_API_URL=f"{tg.api_url}/bot{TOKEN}")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "valet: environment VALET_TELEGRAM_API_URL: telegram.api_url: has the bot token in it: "
        "give the Bot API server's address alone, e.g. https://api.telegram.org (Valet adds "
        "/bot<token>)"]
    assert TOKEN not in err


async def test_a_closed_llm_port_is_nothing_listening(tmp_path, fake_llm):
    port = free_port()
    code, out, err = await _doctor(tmp_path, fake_llm,
                                   VALET_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1")
    assert code == 1
    [line] = [line for line in out.splitlines() if "LLM" in line and "FAIL" in line]
    assert line.endswith(f"did not answer: nothing listens at 127.0.0.1:{port} (connection "
                         "refused): start the LLM server, or check VALET_LLM_BASE_URL"), line
    assert "Timeout" not in out and "Traceback" not in out + err


async def test_a_database_not_made_yet_prints_no_migration_lines(tmp_path, fake_llm):
    _, out, err = await _doctor(tmp_path, fake_llm, VALET_LOG_LEVEL="INFO")
    assert "does not exist yet" in out
    assert "applied migration" not in out + err
    assert not (tmp_path / "valet.db").exists()  # nothing made without --fix


async def test_onboard_takes_the_bot_api_address_with_its_bot(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    tg.user_says(4242, "/start")
    env = onboard_env(tmp_path, tg, twilio, VALET_TELEGRAM_API_URL=tg.api_url + "/bot")
    code, out, err = await run_valet(flags(fake_llm, "--wait-for-owner", "20"), env)
    assert code == 0, out + err
    assert "ok: the bot is @valet_test_bot" in out and "Traceback" not in out + err


async def test_onboard_says_in_one_line_that_no_bot_api_answers(fakes, tmp_path):
    fake_llm, tg, twilio = fakes
    env = onboard_env(tmp_path, tg, twilio, VALET_TELEGRAM_API_URL=tg.api_url + "/nope")
    code, out, err = await run_valet(flags(fake_llm), env)
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out + err, err
    assert lines[0].startswith(f"valet onboard: no Bot API server at {tg.api_url}/nope"), err
