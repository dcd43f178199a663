"""The settings as a whole (`Settings`, the model of valet.yaml) and where Valet keeps its
files by default."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pydantic

from bot.config.channel_sections import (
    ConsoleSettings,
    HTTPSettings,
    SmsSettings,
    TelegramSettings,
    plain_http_problem,
)
from bot.config.llm_sections import LLMSettings
from bot.config.policies import AccessSettings, DeliveryPolicy, ReactLoopConfig
from bot.config.sections import (
    AgentsSettings,
    ApprovalSettings,
    BudgetSettings,
    ContactsSettings,
    DatabaseSettings,
    DeliverySettings,
    GatewaySettings,
    LoopSettings,
    MemorySettings,
    OwnerSettings,
    PairingSettings,
    Section,
    TriggerSettings,
)
from bot.config.urls import database_url_problem
from bot.plumbing.redis import redis_url_problem
from bot.text.phones import country_of

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Settings(Section):
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
    # `keywords:`) are open in its first request, with no LLM call (bot.tools.capability_router).
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
    # The sections the channels' packages own (whatsapp:), by key, as the loader checked
    # them (bot.config.channel_settings): read back with the channel's `SECTION.of(...)`.
    _channel_sections: dict[str, Section] = pydantic.PrivateAttr(default_factory=dict)

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

    def door_reply_minutes(self) -> float:
        """How often a reply given at a channel's door (HELP, a picture) may go to a person,
        for each kind (`sms.door_reply_minutes`; the meter holds every channel to it)."""
        return self.sms.door_reply_minutes

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

    def channel_section(self, key: str) -> Section | None:
        return self._channel_sections.get(key)

    def channel_sections(self) -> tuple[Section, ...]:
        return tuple(self._channel_sections.values())

    def with_channel_section(self, key: str, section: Section) -> Settings:
        copy = self.model_copy()
        copy._channel_sections = {**self._channel_sections, key: section}
        return copy

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
