"""VALET_TELEGRAM_API_URL (bot.config.urls): the Bot API server's address, with or without the
/bot Valet adds itself; anything else is one line naming what is wrong (never the token)."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from bot.config.urls import telegram_api_base, telegram_api_problem

TOKEN = "123456:ABC-secret"


@pytest.mark.parametrize("given", ["https://api.telegram.org", "https://api.telegram.org/",
                                   "https://api.telegram.org/bot", "https://api.telegram.org/bot/"])
def test_both_forms_are_the_same_server(given):
    assert telegram_api_problem(given) is None
    assert telegram_api_base(given) == "https://api.telegram.org"


def test_a_proxy_under_a_path_keeps_its_path():
    assert telegram_api_base("http://127.0.0.1:8081/telegram/bot") == \
        "http://127.0.0.1:8081/telegram"


@pytest.mark.parametrize(("given", "said"), [
    (f"https://api.telegram.org/bot{TOKEN}", "has the bot token in it"),
    (f"https://api.telegram.org/bot{TOKEN}/getMe", "has the bot token in it"),
    ("api.telegram.org", "is not an http(s) address"),
    ("ftp://api.telegram.org", "is not an http(s) address"),
    ("https://api.telegram.org:port", "is not a URL"),
    ("https://api.telegram.org/?x=1", "has a query or fragment"),
])
def test_a_wrong_address_is_one_line_without_the_token(given, said):
    problem = telegram_api_problem(given)
    assert problem is not None and said in problem and "\n" not in problem
    assert "ABC-secret" not in problem


def test_the_settings_carry_the_one_form_and_refuse_the_others(tmp_path):
    settings = load_settings(str(tmp_path / "none.yaml"), missing_ok=True,
                             env={"VALET_TELEGRAM_API_URL": "http://127.0.0.1:9/bot/"})
    assert settings.telegram.api_url == "http://127.0.0.1:9"
    with pytest.raises(ConfigError) as err:
        load_settings(str(tmp_path / "none.yaml"), missing_ok=True,
                      env={"VALET_TELEGRAM_API_URL": f"https://api.telegram.org/bot{TOKEN}"})
    assert str(err.value).startswith("environment VALET_TELEGRAM_API_URL: telegram.api_url: ")
    assert "ABC-secret" not in str(err.value)
