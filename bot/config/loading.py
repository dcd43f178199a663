"""Loading the settings from valet.yaml (optional) and the environment: checked whole at
start-up, every mistake reported at once as `file:line: key: what is wrong`; secrets only from
the environment."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import pydantic
import yaml

from bot.config.channel_settings import ChannelSection, ChannelSections
from bot.config.problems import (
    ConfigError,
    Problem,
    did_you_mean,
    in_file_order,
    parse_yaml,
    validation_problems,
    yaml_line,
)
from bot.config.registries import registry_paths
from bot.config.sections import Section
from bot.config.settings import Settings
from bot.config.urls import telegram_api_base, telegram_api_problem
from bot.text.phones import PhoneNumberError, normalize

# Environment variable -> path in the settings tree.
ENV_OVERRIDES: dict[str, tuple[str, ...]] = {
    "VALET_LLM_BASE_URL": ("llm", "base_url"),
    "VALET_LLM_MODEL": ("llm", "model"),
    "VALET_DATABASE_URL": ("database_url",),
    "VALET_DATABASE_POOL_SIZE": ("database", "pool_size"),
    "VALET_DATA_DIR": ("data_directory",),
    "VALET_PERSONA": ("persona",),
    "VALET_TIMEZONE": ("timezone",),
    "VALET_LOG_LEVEL": ("log_level",),
    "VALET_LOG_FORMAT": ("log_format",),
    "VALET_OWNER_NAME": ("owner", "name"),
    "VALET_TRANSCRIPTS_DIR": ("transcripts_dir",),
    "VALET_AGENTS_FILES": ("agents", "registries"),
    "VALET_TOOL_EXPOSURE": ("tool_exposure",),
    "VALET_CAPABILITY_ROUTER": ("capability_router",),
    "VALET_REDIS_URL": ("redis_url",),
    "VALET_PUBLIC_URL": ("public_url",),
    "VALET_SMS_FROM_NUMBER": ("sms", "from_number"),
    "VALET_SMS_MESSAGING_SERVICE_SID": ("sms", "messaging_service_sid"),
    "VALET_HTTP_HOST": ("http", "host"),
    "VALET_HTTP_PORT": ("http", "port"),
    "VALET_TELEGRAM_MODE": ("telegram", "mode"),
    "VALET_CONSOLE_ENABLED": ("console", "enabled"),
    "VALET_CONSOLE_URL": ("console", "url"),
}


SECRET_KEYS = {("llm", "api_key"), ("telegram", "token"), ("telegram", "webhook_secret"),
               ("telegram", "api_url")}


def config_path(cli_path: str | None, env: dict[str, str]) -> tuple[Path, bool]:
    """(path, explicitly asked for). The default ./valet.yaml may be absent."""
    if cli_path:
        return Path(cli_path), True
    if env.get("VALET_CONFIG"):
        return Path(env["VALET_CONFIG"]), True
    return Path("valet.yaml"), False


def load_settings(cli_path: str | None = None, env: dict[str, str] | None = None, *,
                  missing_ok: bool = False, channels: ChannelSections | None = None
                  ) -> Settings:
    """The settings, or ConfigError naming every mistake (file:line or variable, key, what).
    `missing_ok`: a file asked for that does not exist yet is the defaults (`valet onboard
    --config PATH` creates it). `channels`: the sections the channels' packages own
    (channels.registry gives them; None: none, a valet.yaml with one is refused)."""
    env = dict(os.environ) if env is None else env
    path, explicit = config_path(cli_path, env)
    raw: dict[str, Any] = {}
    root: yaml.Node | None = None
    if path.exists():
        raw, root = _read_yaml(path)
    elif explicit and not missing_ok:
        raise ConfigError(f"{path}: configuration file not found")
    from_env: dict[tuple[str, ...], str] = {}

    def where(loc: tuple[str, ...]) -> str:
        for key_path, var in from_env.items():
            if loc[:len(key_path)] == key_path:
                return f"environment {var}"
        return f"{path}:{yaml_line(root, loc)}" if path.exists() else "environment"

    problems: list[Problem] = []
    sections = _channel_sections(raw, channels, where, problems)
    overrides = {**ENV_OVERRIDES, **{var: (section.key, *key_path) for section in sections
                                     for var, key_path in section.env.items()}}
    for var, key_path in overrides.items():
        if env.get(var):
            _set(raw, key_path, env[var])
            from_env[key_path] = var
    problems += [Problem(where(secret), ".".join(secret), "secrets are read only from the "
                         "environment (VALET_LLM_API_KEY); remove it from the file")
                 for secret in SECRET_KEYS if _get(raw, secret) is not None]
    for secret in SECRET_KEYS:
        _pop(raw, secret)
    raw["source"] = str(path) if path.exists() else "<defaults>"
    own = {section.key: raw.pop(section.key, None) for section in sections}
    settings: Settings | None = None
    try:
        settings = Settings.model_validate(raw)
    except pydantic.ValidationError as err:
        problems += validation_problems(err, Settings, where)
    checked = {section.key: _checked_section(section, own[section.key], where, problems)
               for section in sections}
    problems += _unknown_tool_modules(raw, path if path.exists() else None, where)
    if settings is not None:
        problems += _phone_numbers_in_e164(settings, where)
        problems += _fallback_keys(settings, env, where)
        problems += _database_password(settings, env)
    api_url = env.get("VALET_TELEGRAM_API_URL") or None
    problem = telegram_api_problem(api_url) if api_url else None
    if problem:
        problems.append(Problem("environment VALET_TELEGRAM_API_URL", "telegram.api_url",
                                problem))
    if problems:
        raise ConfigError(in_file_order(problems))
    assert settings is not None
    for key, section in checked.items():
        if section is not None:
            settings = settings.with_channel_section(key, section)
    api_key = env.get("VALET_LLM_API_KEY") or env.get("OPENAI_API_KEY")
    settings.llm.api_key = pydantic.SecretStr(api_key) if api_key else None
    settings.telegram.token = env.get("VALET_TELEGRAM_TOKEN") or None
    settings.telegram.webhook_secret = env.get("VALET_TELEGRAM_WEBHOOK_SECRET") or None
    settings.telegram.api_url = telegram_api_base(api_url) if api_url else None
    return settings


def _channel_sections(raw: dict[str, Any], channels: ChannelSections | None, where: Any,
                      problems: list[Problem]) -> Sequence[ChannelSection[Any]]:
    """The channels' own sections, asked of `channels` with the modules `channel_modules:`
    names (a module that cannot be used is a problem of that key; the rest is checked)."""
    if channels is None:
        return ()
    named = raw.get("channel_modules")
    modules = [m for m in named if isinstance(m, str)] if isinstance(named, list) else []
    try:
        return channels(modules)
    except ConfigError as err:
        problems.extend(Problem(where(("channel_modules",)), "channel_modules",
                                line.removeprefix("channel_modules: ")) for line in err.lines)
        return channels([])


def _checked_section(section: ChannelSection[Any], given: Any, where: Any,
                     problems: list[Problem]) -> Section | None:
    """A channel's section checked as the core's are: each mistake with its line and key."""
    try:
        return section.model.model_validate({} if given is None else given)
    except pydantic.ValidationError as err:
        problems.extend(
            Problem(p.where, f"{section.key}.{p.key}" if p.key else section.key, p.text)
            for p in validation_problems(err, section.model,
                                         lambda loc: where((section.key, *loc))))
        return None


def _unknown_tool_modules(raw: dict[str, Any], path: Path | None,
                          where: Any) -> list[Problem]:
    """`tools.<module>:` must name a tool module of the registry files (web_fetch, clock...):
    a typo would otherwise be ignored and its settings silently not applied."""
    tools = raw.get("tools")
    if not isinstance(tools, dict) or not tools:
        return []
    known = known_tool_modules(raw, path)
    if known is None:
        return []
    return [Problem(where(("tools", str(name))), f"tools.{name}",
                    "no tool module of that name" + did_you_mean(str(name), known))
            for name in tools if name not in known]


def known_tool_modules(raw: dict[str, Any], path: Path | None) -> set[str] | None:
    """Short module names (`web_fetch`) listed in the registry files; None if they cannot be
    read here (the registry loader reports that, with its own file and line)."""
    given = raw.get("agents")
    agents = given if isinstance(given, dict) else {}
    extra = agents.get("registries") or []
    if isinstance(extra, str):
        extra = [p.strip() for p in re.split(r"[,:]", extra) if p.strip()]
    base = path.parent if path is not None else Path.cwd()
    names: set[str] = set()
    try:
        for registry in registry_paths([str(e) for e in extra], base):
            data = parse_yaml(registry.read_text(encoding="utf-8"))[0] or {}
            for entry in data.get("tools") or []:
                if isinstance(entry, dict) and isinstance(entry.get("module"), str):
                    names.add(entry["module"].rsplit(".", 1)[-1])
    except (OSError, yaml.YAMLError, AttributeError, TypeError):
        return None
    return names


def _fallback_keys(settings: Settings, env: dict[str, str], where: Any) -> list[Problem]:
    """Each fallback model's key, from the environment variable it names."""
    problems = []
    for i, fallback in enumerate(settings.llm.fallback_models):
        if fallback.api_key_env is None:
            continue
        key = env.get(fallback.api_key_env)
        if key:
            fallback.api_key = pydantic.SecretStr(key)
            continue
        at = ("llm", "fallback_models", str(i), "api_key_env")
        problems.append(Problem(where(at), ".".join(at), f"{fallback.api_key_env} is not set "
                                "in the environment (it should hold this model's API key)"))
    return problems


DATABASE_PASSWORD_ENV = "VALET_DATABASE_PASSWORD"


def _database_password(settings: Settings, env: dict[str, str]) -> list[Problem]:
    """VALET_DATABASE_PASSWORD (or its _FILE: a compose secret) into a Postgres URL that has
    none, so the password never has to sit in the URL's variable."""
    password = env.get(DATABASE_PASSWORD_ENV)
    if not password:
        return []
    where = f"environment {DATABASE_PASSWORD_ENV}"
    url = settings.database_url
    if not url.startswith(("postgresql://", "postgres://")):
        return [Problem(where, "database_url", "a password is given but the database is not "
                        "Postgres (VALET_DATABASE_URL)")]
    parts = urlsplit(url)
    if parts.password is not None:
        return [Problem(where, "database_url", "VALET_DATABASE_URL carries a password too; "
                        "keep one")]
    user = quote(unquote(parts.username or ""), safe="")
    host = parts.netloc.rpartition("@")[2]
    settings.database_url = urlunsplit(parts._replace(
        netloc=f"{user}:{quote(password, safe='')}@{host}"))
    return []


def _phone_numbers_in_e164(settings: Settings, where: Any) -> list[Problem]:
    """Numbers are compared as E.164 everywhere: "+1 (212) 555-0123" is "+12125550123"."""
    region = settings.sms.default_region
    lists: list[tuple[tuple[str, ...], list[str]]] = [
        (("owner", "phone_numbers"), settings.owner.phone_numbers)]
    if "sms" in settings.access.channels:
        lists.append((("access", "channels", "sms", "allow"),
                      settings.access.channels["sms"].allow))
    if settings.sms.from_number:
        lists.append((("sms", "from_number"), [settings.sms.from_number]))
    problems = []
    for keys, numbers in lists:
        for i, number in enumerate(numbers):
            try:
                numbers[i] = normalize(number, region)
            except PhoneNumberError as err:
                at = (*keys, str(i)) if keys[-1] != "from_number" else keys
                problems.append(Problem(where(at), ".".join(keys), str(err)))
    if settings.sms.from_number:
        settings.sms.from_number = lists[-1][1][0]
    return problems


def _read_yaml(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
        data, root = parse_yaml(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: invalid YAML: {err.problem or err}") from err
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read: {err}") from err
    if data is None:
        return {}, root
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the top level must be a mapping of settings")
    return data, root


def _get(data: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _set(data: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        data = data.setdefault(key, {})
    data[keys[-1]] = value


def _pop(data: dict[str, Any], keys: tuple[str, ...]) -> None:
    parent = _get(data, keys[:-1]) if len(keys) > 1 else data
    if isinstance(parent, dict):
        parent.pop(keys[-1], None)
