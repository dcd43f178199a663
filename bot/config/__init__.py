"""Settings: `valet.yaml` (optional) plus environment overrides, checked whole at start-up.

Secrets come only from the environment and are kept in `SecretStr` (never printed). Every
mistake of the file is reported at once, each as `file:line: key: what is wrong`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, unquote, urlsplit, urlunsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pydantic
import yaml

from bot.config.policies import AccessSettings, DeliveryPolicy, ReactLoopConfig
from bot.config.problems import (
    Problem,
    did_you_mean,
    in_file_order,
    parse_yaml,
    validation_problems,
)
from bot.config.problems import yaml_line as yaml_line  # re-exported for persona files
from bot.config.registries import registry_paths
from bot.config.sections import (
    SECRET_WORDS as SECRET_WORDS,
)
from bot.config.sections import (  # the sections, re-exported: bot.config is their home
    AgentsSettings as AgentsSettings,
)
from bot.config.sections import (
    ApprovalSettings as ApprovalSettings,
)
from bot.config.sections import (
    BudgetSettings as BudgetSettings,
)
from bot.config.sections import (
    ConsoleSettings as ConsoleSettings,
)
from bot.config.sections import (
    ContactsSettings as ContactsSettings,
)
from bot.config.sections import (
    DatabaseSettings as DatabaseSettings,
)
from bot.config.sections import (
    DeliverySettings as DeliverySettings,
)
from bot.config.sections import (
    FallbackModelSettings as FallbackModelSettings,
)
from bot.config.sections import (
    GatewaySettings as GatewaySettings,
)
from bot.config.sections import (
    HTTPSettings as HTTPSettings,
)
from bot.config.sections import (
    LLMSettings as LLMSettings,
)
from bot.config.sections import (
    LoopSettings as LoopSettings,
)
from bot.config.sections import (
    MemorySettings as MemorySettings,
)
from bot.config.sections import (
    ModelPrice as ModelPrice,
)
from bot.config.sections import (
    OwnerSettings as OwnerSettings,
)
from bot.config.sections import (
    PairingSettings as PairingSettings,
)
from bot.config.sections import (
    SmsSettings as SmsSettings,
)
from bot.config.sections import (
    TelegramSettings as TelegramSettings,
)
from bot.config.sections import (
    TriggerSettings as TriggerSettings,
)
from bot.config.sections import (
    _Section as _Section,
)
from bot.config.sections import plain_http_problem as plain_http_problem
from bot.config.urls import database_url_problem
from bot.plumbing.redis import redis_url_problem
from bot.text.phones import PhoneNumberError, country_of, normalize

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(Exception):
    """A configuration problem, worded for the person who has to fix it. Several problems of
    one file travel together: one line each."""

    def __init__(self, message: str | list[Problem] | list[str]) -> None:
        lines = [message] if isinstance(message, str) else [str(p) for p in message]
        super().__init__("\n".join(lines))
        self.lines = lines


class Settings(_Section):
    source: str = "<defaults>"
    llm: LLMSettings = LLMSettings()
    # "": the default, filled in below (never relative to the current directory).
    database_url: str = ""
    database: DatabaseSettings = DatabaseSettings()  # pool size, prepared statements
    # Where Valet keeps its files (the default SQLite database, the log file, the chat's
    # history); None: beside valet.yaml (its data/), else $XDG_DATA_HOME/valet. A service sets
    # it (VALET_DATA_DIR=/var/lib/valet).
    data_directory: str | None = None
    persona: str = "default"
    timezone: str = "UTC"
    log_level: str = "WARNING"
    # "json": one JSON object a line (containers, log collectors); "text": for a person.
    log_format: Literal["text", "json"] = "text"
    owner: OwnerSettings = OwnerSettings()
    loop: LoopSettings = LoopSettings()  # type: ignore[valid-type]
    delivery: DeliverySettings = DeliverySettings()  # type: ignore[valid-type]
    gateway: GatewaySettings = GatewaySettings()
    tools: dict[str, dict[str, Any]] = {}
    agents: AgentsSettings = AgentsSettings()
    # Which tools each request carries: "capabilities" (a small core; a capability's tools once
    # the model opens it: few tokens a message) or "all" (every tool on every request).
    tool_exposure: Literal["capabilities", "all"] = "capabilities"
    # With "capabilities": the capabilities a message names in so many words (the registry's
    # `keywords:`) are open in its first request, with no LLM call (bot.capability_router).
    capability_router: bool = True
    approvals: ApprovalSettings = ApprovalSettings()
    triggers: TriggerSettings = TriggerSettings()
    memory: MemorySettings = MemorySettings()
    contacts: ContactsSettings = ContactsSettings()
    rate_limit_per_minute: int = pydantic.Field(20, gt=0)
    transcripts_dir: str | None = None
    access: AccessSettings = AccessSettings()
    redis_url: str | None = None  # several processes: per-user locks across them
    stall_warning_ms: int = pydantic.Field(250, gt=0)  # log an event-loop stall longer than this
    sms: SmsSettings = SmsSettings()
    # Where this server is reached from outside (https://valet.example.com): webhooks are
    # signed for this address, not the one a proxy forwards to.
    public_url: str | None = None
    http: HTTPSettings = HTTPSettings()
    telegram: TelegramSettings = TelegramSettings()
    console: ConsoleSettings = ConsoleSettings()  # the owner's web console (/console)
    pairing: PairingSettings = PairingSettings()  # strangers asking in, as the owner hears it
    budget: BudgetSettings = BudgetSettings()  # a daily allowance per person
    # Channels beyond Valet's own: modules whose SPEC is a channels.spec.ChannelSpec
    # (channels/registry.py; docs/extending.md, "Adding a channel").
    channel_modules: list[str] = []

    @pydantic.field_validator("public_url")
    @classmethod
    def _public_over_https(cls, value: str | None) -> str | None:
        problem = plain_http_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @pydantic.model_validator(mode="after")
    def _telegram_webhook_at_the_public_url(self) -> Settings:
        """Webhook mode without its own URL uses the server's public address."""
        if self.telegram.mode == "webhook" and not self.telegram.webhook_url:
            self.telegram.webhook_url = self.public_url
        return self

    @pydantic.field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise ValueError(f"unknown timezone {value!r} (use an IANA name such as "
                             "'Europe/Paris')") from err
        return value

    @pydantic.field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"{value!r} is not a log level; use one of "
                             f"{', '.join(LOG_LEVELS)}")
        return level

    @pydantic.field_validator("database_url")
    @classmethod
    def _usable_database(cls, value: str) -> str:
        problem = database_url_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @pydantic.field_validator("redis_url")
    @classmethod
    def _usable_redis(cls, value: str | None) -> str | None:
        problem = redis_url_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @pydantic.model_validator(mode="after")
    def _database_in_one_known_place(self) -> Settings:
        """The default database lives next to the valet.yaml in use (its `data/`), else in
        the user's data directory; a relative SQLite path is read from the valet.yaml's
        directory. Running `valet` from another directory finds the same conversation."""
        if not self.database_url:
            self.database_url = f"sqlite:///{self.default_data_dir() / 'valet.db'}"
        elif (relative := _relative_sqlite_path(self.database_url)) and \
                self._has_config_file():
            self.database_url = f"sqlite:///{self.config_dir() / relative}"
        return self

    def _has_config_file(self) -> bool:
        return self.source != "<defaults>" and Path(self.source).is_file()

    def default_data_dir(self) -> Path:
        if self.data_directory:
            return self.config_dir() / self.data_directory  # an absolute path stays
        if self._has_config_file():
            return Path(self.source).resolve().parent / "data"
        return user_data_dir()

    def data_dir(self) -> Path:
        """Where this process keeps its files (log, chat history): beside the SQLite
        database, else the default data directory."""
        url = self.database_url
        if self.data_directory:
            return self.config_dir() / self.data_directory  # an absolute path stays
        if url.startswith("sqlite:///") and not url.endswith(":memory:"):
            return Path(url.removeprefix("sqlite:///")).parent
        return self.default_data_dir()

    def log_file(self) -> Path:
        """Where `valet chat` writes its log (the chat itself shows only short notes)."""
        return self.data_dir() / "valet.log"

    def console_url(self) -> str:
        """Where the owner's browser reaches the console (without /console)."""
        if self.console.url:
            return self.console.url
        if self.public_url:
            return self.public_url.rstrip("/")
        host = self.http.host if self.http.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.http.port}"

    def loop_config(self) -> ReactLoopConfig:
        # A dict when a test or caller replaced the section with model_copy(update=...).
        loop = self.loop if isinstance(self.loop, dict) else self.loop.model_dump(
            exclude_unset=True)
        return ReactLoopConfig(**loop)

    def delivery_policy(self) -> DeliveryPolicy:
        delivery = self.delivery if isinstance(self.delivery, dict) else \
            self.delivery.model_dump(exclude_unset=True)
        return DeliveryPolicy(**delivery)

    def sms_countries(self) -> list[str]:
        """Where Valet may send SMS: `sms.allowed_countries`, else the countries of its own
        number and of the owner's numbers."""
        if self.sms.allowed_countries is not None:
            return list(self.sms.allowed_countries)
        numbers = [n for n in [self.sms.from_number, *self.owner.phone_numbers] if n]
        return sorted({c for c in (country_of(n) for n in numbers) if c})

    def sms_segment_price(self, number: str) -> float:
        """What one SMS segment to this number costs, in US dollars: its country's price in
        `sms.price_per_segment`, else its `default`, else console.sms_price_per_segment."""
        prices = self.sms.price_per_segment
        fallback = self.console.sms_price_per_segment
        if prices is None:
            return fallback
        if not isinstance(prices, dict):
            return prices
        return prices.get(country_of(number) or "", prices.get("default", fallback))

    def config_dir(self) -> Path:
        """Where relative paths in the configuration are read from."""
        return Path(self.source).parent if self.source != "<defaults>" else Path.cwd()


def user_data_dir(env: dict[str, str] | None = None) -> Path:
    """$XDG_DATA_HOME/valet, by default ~/.local/share/valet."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "valet"


def _relative_sqlite_path(url: str) -> str | None:
    rest = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else None
    if rest is None or rest.startswith("/") or rest == ":memory:" or not rest:
        return None
    return rest


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
                  missing_ok: bool = False) -> Settings:
    """The settings, or ConfigError naming every mistake (file:line or variable, key, what).
    `missing_ok`: a file asked for that does not exist yet is the defaults (`valet onboard
    --config PATH` creates it)."""
    env = dict(os.environ) if env is None else env
    path, explicit = config_path(cli_path, env)
    raw: dict[str, Any] = {}
    root: yaml.Node | None = None
    if path.exists():
        raw, root = _read_yaml(path)
    elif explicit and not missing_ok:
        raise ConfigError(f"{path}: configuration file not found")
    from_env: dict[tuple[str, ...], str] = {}
    for var, key_path in ENV_OVERRIDES.items():
        if env.get(var):
            _set(raw, key_path, env[var])
            from_env[key_path] = var

    def where(loc: tuple[str, ...]) -> str:
        for key_path, var in from_env.items():
            if loc[:len(key_path)] == key_path:
                return f"environment {var}"
        return f"{path}:{yaml_line(root, loc)}" if path.exists() else "environment"

    problems = [Problem(where(secret), ".".join(secret), "secrets are read only from the "
                        "environment (VALET_LLM_API_KEY); remove it from the file")
                for secret in SECRET_KEYS if _get(raw, secret) is not None]
    for secret in SECRET_KEYS:
        _pop(raw, secret)
    raw["source"] = str(path) if path.exists() else "<defaults>"
    settings: Settings | None = None
    try:
        settings = Settings.model_validate(raw)
    except pydantic.ValidationError as err:
        problems += validation_problems(err, Settings, where)
    problems += _unknown_tool_modules(raw, path if path.exists() else None, where)
    if settings is not None:
        problems += _phone_numbers_in_e164(settings, where)
        problems += _fallback_keys(settings, env, where)
        problems += _database_password(settings, env)
    if problems:
        raise ConfigError(in_file_order(problems))
    assert settings is not None
    api_key = env.get("VALET_LLM_API_KEY") or env.get("OPENAI_API_KEY")
    settings.llm.api_key = pydantic.SecretStr(api_key) if api_key else None
    settings.telegram.token = env.get("VALET_TELEGRAM_TOKEN") or None
    settings.telegram.webhook_secret = env.get("VALET_TELEGRAM_WEBHOOK_SECRET") or None
    settings.telegram.api_url = env.get("VALET_TELEGRAM_API_URL") or None
    return settings


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
