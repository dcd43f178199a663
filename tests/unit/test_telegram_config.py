"""Telegram and HTTP settings: secrets only from the environment, checked at start-up."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from channels.telegram.service import check_settings


def test_the_token_is_read_from_the_environment_only(tmp_path):
    config = tmp_path / "valet.yaml"
    config.write_text("telegram:\n  mode: polling\n  token: '123:abc'\n")
    with pytest.raises(ConfigError, match=r"valet.yaml:3: telegram.token: secrets are read only"):
        load_settings(str(config), env={})
    config.write_text("telegram:\n  groups: true\nhttp:\n  port: 9000\n")
    settings = load_settings(str(config), env={"VALET_TELEGRAM_TOKEN": "123:abc",
                                               "VALET_HTTP_HOST": "0.0.0.0"})
    assert settings.telegram.token == "123:abc" and settings.telegram.groups
    assert (settings.http.host, settings.http.port) == ("0.0.0.0", 9000)
    assert "123:abc" not in repr(settings) and "123:abc" not in settings.model_dump_json()


@pytest.mark.parametrize("secret", ["", "has space", "x" * 257, "semi;colon"])
def test_webhook_mode_needs_a_well_formed_secret(tmp_path, secret):
    config = tmp_path / "valet.yaml"
    config.write_text("telegram:\n  mode: webhook\n  webhook_url: https://v.example.com\n")
    settings = load_settings(str(config), env={"VALET_TELEGRAM_TOKEN": "1:a",
                                               "VALET_TELEGRAM_WEBHOOK_SECRET": secret})
    with pytest.raises(ConfigError, match="VALET_TELEGRAM_WEBHOOK_SECRET"):
        check_settings(settings.telegram)


def test_webhook_mode_needs_its_public_address(tmp_path):
    config = tmp_path / "valet.yaml"
    config.write_text("telegram:\n  mode: webhook\n")
    settings = load_settings(str(config), env={"VALET_TELEGRAM_TOKEN": "1:a",
                                               "VALET_TELEGRAM_WEBHOOK_SECRET": "ok-secret"})
    with pytest.raises(ConfigError, match=r"telegram\.webhook_url"):
        check_settings(settings.telegram)
