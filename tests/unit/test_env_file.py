"""The env file `valet onboard` writes and every `valet` loads: KEY=value lines put into the
environment before the settings are read; the environment wins, also a variable given there
as a file (VALET_X_FILE); a file others may read is refused; values never appear in errors."""

from __future__ import annotations

import os
import stat

import pytest

from bot.config.env_file import EnvFileError, load_env_file, read_env_file, write_env_file
from bot.config.secret_files import load_secret_files


def env_file(tmp_path, text: str, mode: int = 0o600):
    path = tmp_path / "valet.env"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_lines_are_loaded_and_the_environment_wins(tmp_path):
    path = env_file(tmp_path, "# Valet\nVALET_LLM_API_KEY=sk-file\nexport VALET_TIMEZONE="
                              "'Europe/Paris'\nVALET_OWNER_NAME=\"Sam \\\"the\\\" owner\"\n\n"
                              "VALET_LLM_MODEL=from-file\n")
    env = {"VALET_LLM_MODEL": "from-shell"}
    assert load_env_file(path, env, required=True) == [
        "VALET_LLM_API_KEY", "VALET_TIMEZONE", "VALET_OWNER_NAME"]
    assert env == {"VALET_LLM_MODEL": "from-shell", "VALET_LLM_API_KEY": "sk-file",
                   "VALET_TIMEZONE": "Europe/Paris", "VALET_OWNER_NAME": 'Sam "the" owner'}


def test_a_secret_given_as_a_file_in_the_environment_wins_over_the_env_file(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("123:from-the-secret-file\n")
    path = env_file(tmp_path, "VALET_TELEGRAM_TOKEN=123:from-env-file\n"
                              "VALET_SECRET_KEY_FILE=/nonexistent\n")
    env = {"VALET_TELEGRAM_TOKEN_FILE": str(secret), "VALET_SECRET_KEY": "k"}
    assert load_env_file(path, env, required=False) == []  # both given by the environment
    load_secret_files(env)  # no "both set" conflict: they work together
    assert env == {"VALET_TELEGRAM_TOKEN": "123:from-the-secret-file", "VALET_SECRET_KEY": "k"}


def test_an_env_file_may_point_at_a_secret_file(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("the-key")
    path = env_file(tmp_path, f"VALET_SECRET_KEY_FILE={secret}\n")
    env: dict[str, str] = {}
    load_env_file(path, env, required=False)
    load_secret_files(env)
    assert env == {"VALET_SECRET_KEY": "the-key"}


def test_a_file_every_user_can_read_is_refused(tmp_path):
    path = env_file(tmp_path, "VALET_LLM_API_KEY=sk-secret\n", mode=0o644)
    with pytest.raises(EnvFileError) as err:
        load_env_file(path, {}, required=False)
    assert str(err.value) == (f"{path}: other users may read it (mode 0644) and it holds "
                              f"secrets: run `chmod 600 {path}`")
    path.chmod(0o640)  # readable by its group (root:valet): a deliberate choice
    assert load_env_file(path, {}, required=False) == ["VALET_LLM_API_KEY"]


def test_a_line_that_is_not_key_value_names_its_line_not_its_value(tmp_path):
    path = env_file(tmp_path, "VALET_A=1\nsk-oops-pasted-a-key\nVALET-B = 2\n")
    with pytest.raises(EnvFileError) as err:
        read_env_file(path)
    assert str(err.value) == f"{path}:2: ?: not a KEY=value line"
    assert "sk-oops" not in str(err.value)


def test_missing_is_fine_unless_asked_for(tmp_path):
    assert load_env_file(tmp_path / "nope.env", {}, required=False) == []
    with pytest.raises(EnvFileError, match="env file not found"):
        load_env_file(tmp_path / "nope.env", {}, required=True)


def test_writing_keeps_other_lines_and_is_owner_only(tmp_path):
    path = env_file(tmp_path, "# mine\nHTTPS_PROXY=http://proxy:3128\nVALET_LLM_API_KEY=old\n"
                              "VALET_GONE=x\n", mode=0o600)
    write_env_file(path, {"VALET_LLM_API_KEY": "new value", "VALET_GONE": None,
                          "VALET_EVENTS_TOKEN": "abc123"})
    assert path.read_text() == ("# mine\nHTTPS_PROXY=http://proxy:3128\n"
                                "VALET_LLM_API_KEY=\"new value\"\nVALET_EVENTS_TOKEN=abc123\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_env_file(path)["VALET_LLM_API_KEY"] == "new value"
    fresh = tmp_path / "fresh.env"
    old = os.umask(0)
    try:
        write_env_file(fresh, {"VALET_SECRET_KEY": "k"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_a_default_file_this_user_may_not_read_is_someone_elses(tmp_path, monkeypatch):
    """systemd reads /etc/valet/valet.env as root before starting Valet as `valet`."""
    path = env_file(tmp_path, "VALET_LLM_API_KEY=sk-root-only\n")
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    env: dict[str, str] = {}
    assert load_env_file(path, env, required=False) == [] and env == {}
