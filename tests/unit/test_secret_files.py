"""Secrets from files (`VALET_X_FILE`, as Docker secrets and systemd credentials give them) and
plain-http public addresses refused: the production defaults of `valet serve`."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from bot.config.secret_files import load_secret_files


def test_a_secret_file_sets_its_variable_and_the_file_variable_goes(tmp_path):
    secret = tmp_path / "telegram_token"
    secret.write_text("123:abc\n")
    env = {"VALET_TELEGRAM_TOKEN_FILE": str(secret), "VALET_AGENTS_FILES": "a.yaml",
           "OTHER_FILE": "/untouched"}
    assert load_secret_files(env) == ["VALET_TELEGRAM_TOKEN"]
    assert env == {"VALET_TELEGRAM_TOKEN": "123:abc", "VALET_AGENTS_FILES": "a.yaml",
                   "OTHER_FILE": "/untouched"}
    assert load_secret_files(env) == []  # a second pass changes nothing


@pytest.mark.parametrize(("env", "line"), [
    ({"VALET_SECRET_KEY_FILE": "/nonexistent/key"},
     "environment VALET_SECRET_KEY_FILE: cannot read /nonexistent/key: No such file or "
     "directory"),
    ({"VALET_SECRET_KEY_FILE": "{full}", "VALET_SECRET_KEY": "k"},
     "environment: both VALET_SECRET_KEY and VALET_SECRET_KEY_FILE are set; keep one"),
])
def test_a_secret_file_mistake_is_one_line(tmp_path, env, line):
    full = tmp_path / "full"
    full.write_text("a-key\n")
    env = {k: v.replace("{full}", str(full)) for k, v in env.items()}
    with pytest.raises(ConfigError) as err:
        load_secret_files(env)
    assert str(err.value) == line.replace("{full}", str(full))


def test_an_empty_secret_file_means_not_set(tmp_path):
    """Compose lists every secret Valet can use; the ones a deployment leaves out are empty
    files (no Twilio: an empty twilio_auth_token), as an empty variable is "not set"."""
    empty = tmp_path / "twilio_auth_token"
    empty.write_text("")
    env = {"VALET_TWILIO_AUTH_TOKEN_FILE": str(empty)}
    assert load_secret_files(env) == [] and env == {}
    env = {"VALET_TWILIO_AUTH_TOKEN_FILE": str(empty), "VALET_TWILIO_AUTH_TOKEN": "from-env"}
    assert load_secret_files(env) == []
    assert env == {"VALET_TWILIO_AUTH_TOKEN": "from-env"}  # an empty file overrides nothing


@pytest.mark.parametrize("url", ["http://valet.example.com", "http://203.0.113.5:8080"])
def test_a_plain_http_public_address_is_refused(url):
    with pytest.raises(ConfigError) as err:
        load_settings(env={"VALET_PUBLIC_URL": url})
    assert str(err.value).startswith(f"environment VALET_PUBLIC_URL: public_url: {url!r} is "
                                     "plain http")
    assert "https://" in str(err.value)


@pytest.mark.parametrize("url", ["http://localhost:8080", "http://127.0.0.1:8080",
                                 "http://[::1]:8080", "https://abc.trycloudflare.com"])
def test_https_and_this_machine_are_accepted(url):
    assert load_settings(env={"VALET_PUBLIC_URL": url}).public_url == url


def test_a_plain_http_telegram_webhook_is_refused_with_its_line(tmp_path):
    config = tmp_path / "valet.yaml"
    config.write_text("telegram:\n  mode: webhook\n  webhook_url: http://valet.example.com\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(config), env={})
    assert str(err.value).startswith(f"{config}:3: telegram.webhook_url: ")


def test_webhook_mode_uses_the_public_address_by_default():
    settings = load_settings(env={"VALET_PUBLIC_URL": "https://valet.example.com",
                                  "VALET_TELEGRAM_MODE": "webhook"})
    assert settings.telegram.webhook_url == "https://valet.example.com"


def test_the_database_password_joins_a_postgres_url_that_has_none(tmp_path):
    """compose gives Valet the Postgres password as a file: VALET_DATABASE_PASSWORD_FILE."""
    secret = tmp_path / "postgres_password"
    secret.write_text("p@ss/w:rd\n")
    env = {"VALET_DATABASE_URL": "postgresql://valet@postgres:5432/valet",
           "VALET_DATABASE_PASSWORD_FILE": str(secret)}
    load_secret_files(env)
    settings = load_settings(env=env)
    assert settings.database_url == "postgresql://valet:p%40ss%2Fw%3Ard@postgres:5432/valet"


@pytest.mark.parametrize(("url", "problem"), [
    ("postgresql://valet:other@postgres/valet", "VALET_DATABASE_URL carries a password too; "
                                                "keep one"),
    ("sqlite:////var/lib/valet/valet.db", "a password is given but the database is not "
                                          "Postgres (VALET_DATABASE_URL)")])
def test_a_database_password_that_cannot_apply_is_one_line(url, problem):
    with pytest.raises(ConfigError) as err:
        load_settings(env={"VALET_DATABASE_URL": url, "VALET_DATABASE_PASSWORD": "pw"})
    assert str(err.value) == f"environment VALET_DATABASE_PASSWORD: database_url: {problem}"
