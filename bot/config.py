"""Settings: `valet.yaml` (optional) plus environment overrides, validated once at start-up.

Secrets come only from the environment. A mistake stops start-up with the file, the key and,
where the YAML has one, the line.
"""

from __future__ import annotations

import os
import re
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pydantic
import yaml

from bot.gateway.access import AccessSettings
from bot.loop import ReactLoopConfig


class ConfigError(Exception):
    """A configuration problem, worded for the person who has to fix it."""


class _Section(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class LLMSettings(_Section):
    base_url: str | None = None  # None: the client's default (api.openai.com)
    model: str | None = None
    timeout_seconds: float = 60.0
    extra_body: dict[str, Any] = {}
    # Only from the environment (VALET_LLM_API_KEY, else OPENAI_API_KEY); never from the file.
    api_key: str | None = pydantic.Field(default=None, exclude=True)
    # Voice notes go to the same endpoint's /audio/transcriptions with this model (None: the
    # person is told voice notes cannot be heard yet).
    transcription_model: str | None = None
    vision: bool = False  # the model can look at photos

    @property
    def configured(self) -> bool:
        return bool(self.model and (self.api_key or self.base_url))


class OwnerSettings(_Section):
    name: str = "owner"
    telegram_ids: list[str] = []
    phone_numbers: list[str] = []


class ApprovalSettings(_Section):
    timeout_minutes: int = pydantic.Field(30, gt=0)  # a request not answered by then expires
    # An edited request is shown again for a yes (true), or runs at once (false).
    confirm_edits: bool = True
    sweep_seconds: float = pydantic.Field(30.0, gt=0)  # how often expiries are looked for


class AgentsSettings(_Section):
    # Registry files added to the built-in agents/registry.yaml; relative paths are read from
    # the directory of valet.yaml (the current directory when there is none).
    registries: list[str] = []
    pool_ttl_minutes: int = pydantic.Field(24 * 60, gt=0)  # a waiting task expires after this
    pool_max_per_user: int = pydantic.Field(5, ge=1)  # waiting tasks per user at once
    # How a reply to a waiting plain-text question is told apart from a new request: "llm"
    # (one short classification call) or "heuristic" (questions and requests are not answers).
    answer_check: Literal["llm", "heuristic"] = "llm"

    @pydantic.field_validator("registries", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        """VALET_AGENTS_FILES is one string: paths separated by commas or colons."""
        if isinstance(value, str):
            return [p.strip() for p in re.split(r"[,:]", value) if p.strip()]
        return value


class HTTPSettings(_Section):
    """Where `valet serve` listens (webhooks, health checks)."""

    host: str = "127.0.0.1"
    port: int = pydantic.Field(8080, ge=0, le=65535)
    # On SIGTERM, how long running turns get to finish (the rest is redone at the next start).
    shutdown_grace_seconds: float = pydantic.Field(20.0, ge=0)


class TelegramSettings(_Section):
    mode: Literal["polling", "webhook"] = "polling"
    groups: bool = False  # answer in groups (only when mentioned or replied to)
    # Webhook mode: the public https URL Telegram posts to (…/telegram/webhook is added).
    webhook_url: str | None = None
    # Only from the environment: VALET_TELEGRAM_TOKEN (turns the channel on),
    # VALET_TELEGRAM_WEBHOOK_SECRET, VALET_TELEGRAM_API_URL (another Bot API server).
    token: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    webhook_secret: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    api_url: str | None = pydantic.Field(default=None, exclude=True)


class Settings(_Section):
    source: str = "<defaults>"
    llm: LLMSettings = LLMSettings()
    database_url: str = "sqlite:///data/valet.db"
    persona: str = "default"
    timezone: str = "UTC"
    log_level: str = "WARNING"
    owner: OwnerSettings = OwnerSettings()
    loop: dict[str, Any] = {}
    tools: dict[str, dict[str, Any]] = {}
    agents: AgentsSettings = AgentsSettings()
    approvals: ApprovalSettings = ApprovalSettings()
    rate_limit_per_minute: int = 20
    transcripts_dir: str | None = None
    access: AccessSettings = AccessSettings()
    redis_url: str | None = None  # several processes: per-user locks across them
    http: HTTPSettings = HTTPSettings()
    telegram: TelegramSettings = TelegramSettings()

    @pydantic.field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise ValueError(f"unknown timezone {value!r} (use an IANA name such as "
                             "'Europe/Paris')") from err
        return value

    @pydantic.field_validator("loop")
    @classmethod
    def _known_loop_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        known = {f.name for f in fields(ReactLoopConfig)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown loop setting(s) {unknown}; known: {sorted(known)}")
        return value

    def loop_config(self) -> ReactLoopConfig:
        return ReactLoopConfig(**self.loop)

    def config_dir(self) -> Path:
        """Where relative paths in the configuration are read from."""
        return Path(self.source).parent if self.source != "<defaults>" else Path.cwd()


# Environment variable -> path in the settings tree.
ENV_OVERRIDES: dict[str, tuple[str, ...]] = {
    "VALET_LLM_BASE_URL": ("llm", "base_url"),
    "VALET_LLM_MODEL": ("llm", "model"),
    "VALET_DATABASE_URL": ("database_url",),
    "VALET_PERSONA": ("persona",),
    "VALET_TIMEZONE": ("timezone",),
    "VALET_LOG_LEVEL": ("log_level",),
    "VALET_OWNER_NAME": ("owner", "name"),
    "VALET_TRANSCRIPTS_DIR": ("transcripts_dir",),
    "VALET_AGENTS_FILES": ("agents", "registries"),
    "VALET_REDIS_URL": ("redis_url",),
    "VALET_HTTP_HOST": ("http", "host"),
    "VALET_HTTP_PORT": ("http", "port"),
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


def load_settings(cli_path: str | None = None, env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ) if env is None else env
    path, explicit = config_path(cli_path, env)
    raw: dict[str, Any] = {}
    root: yaml.Node | None = None
    if path.exists():
        raw, root = _read_yaml(path)
    elif explicit:
        raise ConfigError(f"{path}: configuration file not found")
    for secret in SECRET_KEYS:
        if _get(raw, secret) is not None:
            raise ConfigError(f"{path}:{_line(root, secret)}: {'.'.join(secret)}: secrets are "
                              "read only from the environment (VALET_LLM_API_KEY, "
                              "VALET_TELEGRAM_*); remove it")
    for var, key_path in ENV_OVERRIDES.items():
        if env.get(var):
            _set(raw, key_path, env[var])
    api_key = env.get("VALET_LLM_API_KEY") or env.get("OPENAI_API_KEY")
    raw["source"] = str(path) if path.exists() else "<defaults>"
    try:
        settings = Settings.model_validate(raw)
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        loc = tuple(str(p) for p in first["loc"])
        where = f"{path}:{_line(root, loc)}" if path.exists() else "environment"
        raise ConfigError(f"{where}: {'.'.join(loc)}: {first['msg']}") from err
    settings.llm.api_key = api_key
    settings.telegram.token = env.get("VALET_TELEGRAM_TOKEN") or None
    settings.telegram.webhook_secret = env.get("VALET_TELEGRAM_WEBHOOK_SECRET") or None
    settings.telegram.api_url = env.get("VALET_TELEGRAM_API_URL") or None
    return settings


def _read_yaml(path: Path) -> tuple[dict[str, Any], yaml.Node | None]:
    try:
        text = path.read_text(encoding="utf-8")
        root = yaml.compose(text)
        data = yaml.safe_load(text)
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


def yaml_line(root: yaml.Node | None, keys: tuple[str, ...]) -> str:
    """The 1-based line of a key path in a composed YAML document ('?' if unknown)."""
    return _line(root, keys)


def _line(root: yaml.Node | None, keys: tuple[str, ...]) -> str:
    node, line = root, "?"
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == key:
                    line, node = str(k.start_mark.line + 1), v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
            line = str(node.start_mark.line + 1)
        else:
            return line
    return line


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
