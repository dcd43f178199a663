"""Configuration and persona files: bad input names its file, key and line."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from channels.registry import specs
from persona import load_persona


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_defaults_need_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    settings = load_settings(env={})
    # Never relative to the current directory: the user's data directory (issue 11).
    assert settings.database_url == f"sqlite:///{tmp_path / 'xdg' / 'valet' / 'valet.db'}"
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
        load_persona(path, channels=specs().names())  # the channels Valet has
    path = write(tmp_path, "q.yaml", "name: X\nsystem_prompt: 'unterminated\n")
    with pytest.raises(ConfigError, match=r"q.yaml:\d+: invalid YAML"):
        load_persona(path)
    with pytest.raises(ConfigError, match="built-in personas: default, jeeves"):
        load_persona("nobody")


def problems_of(tmp_path, text: str, env: dict[str, str] | None = None) -> list[str]:
    path = write(tmp_path, "valet.yaml", text)
    with pytest.raises(ConfigError) as err:
        load_settings(path, env=env or {})
    return [line.removeprefix(f"{path}:") for line in err.value.lines]


def test_ranges_are_checked_for_every_loop_knob_and_section(tmp_path):
    said = problems_of(tmp_path, "loop:\n  max_turns: 0\n  tool_execution_timeout: -1\n"
                                 "  llm_max_retries: -1\n  context_trim_threshold: 1.5\n"
                                 "llm:\n  timeout_seconds: 0\nagents:\n  pool_max_per_user: 0\n"
                                 "access:\n  max_pending_pairings: 0\n"
                                 "rate_limit_per_minute: -5\n")
    assert said == [
        "2: loop.max_turns: must be more than 0 (it is 0)",
        "3: loop.tool_execution_timeout: must be more than 0 (it is -1)",
        "4: loop.llm_max_retries: must be at least 0 (it is -1)",
        "5: loop.context_trim_threshold: must be at most 1 (it is 1.5)",
        "7: llm.timeout_seconds: must be more than 0 (it is 0)",
        "9: agents.pool_max_per_user: must be at least 1 (it is 0)",
        "11: access.max_pending_pairings: must be more than 0 (it is 0)",
        "12: rate_limit_per_minute: must be more than 0 (it is -5)",
    ]


def test_delivery_and_gateway_knobs_are_checked_and_reach_their_parts(tmp_path):
    said = problems_of(tmp_path, "delivery:\n  max_attempts: 0\n  max_dleay: 5\n"
                                 "gateway:\n  turn_attempts: 0\n")
    assert said == ["2: delivery.max_attempts: must be more than 0 (it is 0)",
                    "3: delivery.max_dleay: unknown setting; did you mean max_delay?",
                    "5: gateway.turn_attempts: must be at least 1 (it is 0)"]
    path = write(tmp_path, "ok.yaml", "delivery:\n  max_attempts: 9\ngateway:\n"
                                      "  history_messages: 50\n")
    settings = load_settings(path, env={})
    assert settings.delivery_policy().max_attempts == 9
    assert settings.delivery_policy().batch == 200
    assert settings.gateway.history_messages == 50


def test_valid_loop_settings_reach_the_loop(tmp_path):
    path = write(tmp_path, "valet.yaml", "loop:\n  max_turns: 4\n  stream: true\n")
    config = load_settings(path, env={}).loop_config()
    assert config.max_turns == 4 and config.stream is True
    assert config.tool_execution_timeout == 30.0


def test_unknown_keys_anywhere_name_the_nearest_known_one(tmp_path):
    said = problems_of(tmp_path, "tools:\n  clock: {}\n  calculater: {}\n  zzz: {}\n"
                                 "agents:\n  answer_chek: llm\naccess:\n  channels:\n"
                                 "    sms:\n      polcy: pairing\npersonna: jeeves\n")
    assert said[0] == "3: tools.calculater: no tool module of that name; did you mean calculator?"
    assert said[1].startswith("4: tools.zzz: no tool module of that name; known: calculator, "
                              "calendar, clock, contacts, mailbox, memory, messaging, notes, "
                              "planning, profile, reminders, scheduling, sending, weather, "
                              "web_fetch")
    assert said[2] == "6: agents.answer_chek: unknown setting; did you mean answer_check?"
    assert said[3] == "10: access.channels.sms.polcy: unknown setting; did you mean policy?"
    assert said[4] == "11: personna: unknown setting; did you mean persona?"


def test_a_deployment_registry_adds_tool_module_names(tmp_path):
    write(tmp_path, "extra.yaml", "tools:\n  - module: tests.helpers_tools\n")
    path = write(tmp_path, "valet.yaml", "agents:\n  registries: [extra.yaml]\n"
                                         "tools:\n  helpers_tools: {x: 1}\n")
    assert load_settings(path, env={}).tools == {"helpers_tools": {"x": 1}}


def test_database_and_redis_urls_are_checked_by_form(tmp_path):
    write(tmp_path, "valet.yaml", "")
    for url, words in [("mysql://u:pw@h/db", "'mysql' databases are not supported"),
                       ("sqlite:/data/x.db", "is not a SQLite URL"),
                       ("sqlite://data/x.db", "names a host; SQLite has none"),
                       ("postgresql://h:port/db", "is not a valid Postgres URL")]:
        with pytest.raises(ConfigError) as err:
            load_settings(str(tmp_path / "valet.yaml"), env={"VALET_DATABASE_URL": url})
        [line] = err.value.lines
        assert line.startswith("environment VALET_DATABASE_URL: database_url: ") and words in line
        assert "pw" not in line
    for url in ("sqlite:////abs/valet.db", "sqlite:///:memory:",
                "postgresql://valet@db:5432/valet?pool_size=4"):
        assert load_settings(str(tmp_path / "valet.yaml"),
                             env={"VALET_DATABASE_URL": url}).database_url == url
    # A relative SQLite path is read from the valet.yaml's directory, not the current one.
    assert load_settings(str(tmp_path / "valet.yaml"),
                         env={"VALET_DATABASE_URL": "sqlite:///data/valet.db"}
                         ).database_url == f"sqlite:///{tmp_path / 'data' / 'valet.db'}"
    with pytest.raises(ConfigError, match="redis_url: 'localhost:6379' is not a Redis URL"):
        load_settings(str(tmp_path / "valet.yaml"), env={"VALET_REDIS_URL": "localhost:6379"})


def test_secret_looking_keys_in_extra_body_are_refused_at_any_depth(tmp_path):
    said = problems_of(tmp_path, "llm:\n  extra_body:\n    options:\n"
                                 "      Authorization: Bearer x\n    temperature: 0.2\n")
    assert said == ["2: llm.extra_body: options.Authorization looks like a secret; extra_body "
                    "is written into every request and kept in the file: put the key in "
                    "VALET_LLM_API_KEY instead"]
    path = write(tmp_path, "ok.yaml", "llm:\n  extra_body:\n    options: {num_ctx: 8192}\n")
    assert load_settings(path, env={}).llm.extra_body == {"options": {"num_ctx": 8192}}


def test_the_log_level_is_checked_and_any_case_works(tmp_path):
    path = write(tmp_path, "valet.yaml", "log_level: debug\n")
    assert load_settings(path, env={}).log_level == "DEBUG"
    with pytest.raises(ConfigError, match="environment VALET_LOG_LEVEL: log_level: 'LOUD'"):
        load_settings(path, env={"VALET_LOG_LEVEL": "LOUD"})


def test_a_persona_file_reports_every_mistake_at_once(tmp_path):
    path = write(tmp_path, "p.yaml", "name: X\nsytem_prompt: hi\nlines:\n  llm_unavalable: x\n")
    with pytest.raises(ConfigError) as err:
        load_persona(path)
    assert err.value.lines == [
        f"{path}:1: system_prompt: is required",
        f"{path}:2: sytem_prompt: unknown setting; did you mean system_prompt?",
        f"{path}:4: lines.llm_unavalable: unknown setting; did you mean llm_unavailable?",
    ]


def test_a_trigger_lease_renewed_too_rarely_to_hold_is_refused(tmp_path):
    said = problems_of(tmp_path, "triggers:\n  heartbeat_seconds: 30\n  lease_seconds: 45\n")
    assert said == ["1: triggers: heartbeat_seconds (30) must be at most half of lease_seconds "
                    "(45): the leader renews its lease at each heartbeat, and a lease that runs "
                    "out between two lets another process take over from a leader that is alive"]
    path = write(tmp_path, "ok.yaml", "triggers:\n  heartbeat_seconds: 0.5\n  lease_seconds: 2\n")
    settings = load_settings(path, env={})
    assert (settings.triggers.heartbeat_seconds, settings.triggers.lease_seconds) == (0.5, 2)


def test_fallback_models_take_their_keys_from_the_variables_they_name(tmp_path):
    path = write(tmp_path, "valet.yaml", """llm:
  model: main
  fallback_models:
    - model: backup
      base_url: https://backup.example/v1
      api_key_env: BACKUP_KEY
    - model: local
      base_url: http://localhost:11434/v1
      provider: ollama
""")
    settings = load_settings(path, env={"BACKUP_KEY": "sk-backup", "VALET_LLM_API_KEY": "k"})
    first, second = settings.llm.fallback_models
    assert first.api_key is not None and first.api_key.get_secret_value() == "sk-backup"
    assert second.api_key is None and second.provider == "ollama"
    assert "sk-backup" not in settings.model_dump_json()  # never printed with the settings
    with pytest.raises(ConfigError, match=r"valet.yaml:6: llm.fallback_models.0.api_key_env: "
                                          r"BACKUP_KEY is not set in the environment"):
        load_settings(path, env={})
    bad = write(tmp_path, "bad.yaml", "llm:\n  fallback_models:\n    - base_url: ftp://x\n")
    with pytest.raises(ConfigError) as err:
        load_settings(bad, env={})
    assert "bad.yaml:3: llm.fallback_models.0.model" in str(err.value)
    assert "llm.fallback_models.0.base_url: " in str(err.value)


def test_the_loop_mode_and_summary_budget_are_checked(tmp_path):
    path = write(tmp_path, "valet.yaml", "loop:\n  mode: clever\n  summary_tokens: 0\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path, env={})
    assert "valet.yaml:2: loop.mode:" in str(err.value)
    assert "valet.yaml:3: loop.summary_tokens:" in str(err.value)
    ok = write(tmp_path, "ok.yaml", "loop:\n  mode: simple\n")
    assert load_settings(ok, env={}).loop_config().mode == "simple"


def test_the_main_key_is_never_sent_to_another_endpoint(tmp_path):
    from bot.app.models import build_fallbacks
    from bot.plumbing.metrics import Metrics

    path = write(tmp_path, "valet.yaml", """llm:
  base_url: https://api.main.example/v1
  model: main
  fallback_models:
    - model: same-endpoint
    - model: elsewhere
      base_url: https://other.example/v1
""")
    settings = load_settings(path, env={"VALET_LLM_API_KEY": "sk-main"})
    same, other = build_fallbacks(settings, Metrics())
    assert same.llm.inner._client.api_key == "sk-main"  # type: ignore[attr-defined]
    assert other.llm.inner._client.api_key == "not-needed"  # type: ignore[attr-defined]
    assert (same.provider, other.provider) == ("api.main.example", "other.example")
