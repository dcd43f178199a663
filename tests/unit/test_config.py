"""Configuration and persona files: bad input names its file, key and line."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from persona import load_persona


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_defaults_need_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = load_settings(env={})
    assert settings.database_url == "sqlite:///data/valet.db"
    assert settings.timezone == "UTC"
    assert not settings.llm.configured


def test_environment_overrides_the_file_and_keys_come_only_from_it(tmp_path):
    path = write(tmp_path, "valet.yaml", "llm:\n  model: from-file\ntimezone: Europe/Paris\n")
    settings = load_settings(path, env={"VALET_LLM_MODEL": "from-env",
                                        "VALET_LLM_BASE_URL": "http://127.0.0.1:1/v1",
                                        "OPENAI_API_KEY": "sk-fallback"})
    assert settings.llm.model == "from-env"
    assert settings.timezone == "Europe/Paris"
    assert settings.llm.api_key_value() == "sk-fallback"
    assert settings.llm.configured
    both = load_settings(path, env={"VALET_LLM_API_KEY": "sk-valet", "OPENAI_API_KEY": "sk-o"})
    assert both.llm.api_key_value() == "sk-valet"
    assert "sk-valet" not in both.model_dump_json()
    assert "sk-valet" not in repr(both) and "sk-valet" not in str(both)


def test_config_path_order_cli_then_env(tmp_path):
    a = write(tmp_path, "a.yaml", "persona: jeeves\n")
    b = write(tmp_path, "b.yaml", "persona: default\n")
    assert load_settings(a, env={"VALET_CONFIG": b}).persona == "jeeves"
    assert load_settings(None, env={"VALET_CONFIG": b}).persona == "default"
    with pytest.raises(ConfigError, match="not found"):
        load_settings(None, env={"VALET_CONFIG": str(tmp_path / "missing.yaml")})


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "valet.yaml", "llm:\n  model: x\n  base_url: [unclosed\ntimezone: UTC\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path, env={})
    assert str(err.value).startswith(f"{path}:")
    assert "invalid YAML" in str(err.value)


def test_unknown_key_and_bad_value_name_the_key_and_line(tmp_path):
    path = write(tmp_path, "valet.yaml", "persona: default\nllm:\n  modle: x\n")
    with pytest.raises(ConfigError, match=r"valet.yaml:3: llm.modle: unknown setting"):
        load_settings(path, env={})
    path = write(tmp_path, "tz.yaml", "\n\ntimezone: Mars/Olympus\n")
    with pytest.raises(ConfigError, match=r"tz.yaml:3: timezone: .*unknown timezone"):
        load_settings(path, env={})
    path = write(tmp_path, "loop.yaml", "loop:\n  max_turnz: 3\n")
    with pytest.raises(ConfigError, match=r"loop.yaml:2: loop.max_turnz: .*max_turns"):
        load_settings(path, env={})


def test_a_secret_in_the_file_is_refused(tmp_path):
    path = write(tmp_path, "valet.yaml", "llm:\n  model: m\n  api_key: sk-oops\n")
    with pytest.raises(ConfigError, match=r"valet.yaml:3: llm.api_key: secrets"):
        load_settings(path, env={})


def test_built_in_personas_load():
    for name in ("default", "jeeves"):
        persona = load_persona(name)
        assert persona.prompt and persona.lines.llm_unavailable


def test_broken_persona_names_file_key_and_line(tmp_path):
    path = write(tmp_path, "p.yaml", "name: X\nsystem_prompt: hi\nstyle:\n  fax: plain\n")
    with pytest.raises(ConfigError, match=r"p.yaml:3: style: .*fax"):
        load_persona(path)
    path = write(tmp_path, "q.yaml", "name: X\nsystem_prompt: 'unterminated\n")
    with pytest.raises(ConfigError, match=r"q.yaml:\d+: invalid YAML"):
        load_persona(path)
    with pytest.raises(ConfigError, match="built-in personas: default, jeeves"):
        load_persona("nobody")
