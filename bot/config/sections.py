"""The sections of `valet.yaml` (one model each) and the knob sections generated from their
dataclasses (`loop:`, `delivery:`); `bot.config` puts them together and loads the file."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import MISSING, fields
from typing import Any, Literal, get_type_hints
from urllib.parse import urlsplit

import pydantic

from bot.config.policies import DeliveryPolicy, ReactLoopConfig

# Keys of llm.extra_body that would put a credential into the file (and every request log).
SECRET_WORDS = re.compile(r"api.?key|authori[sz]ation|token|password|passwd|secret|cookie"
                          r"|credential|bearer", re.IGNORECASE)


def plain_http_problem(url: str) -> str | None:
    """Webhooks carry people's messages and the secrets that sign them: a public address must
    be https. Plain http only for this machine (localhost, 127.x, ::1), where a tunnel or a
    proxy on the same host adds the TLS (docs/going-live.md)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http(s) URL such as https://valet.example.com"
    if parts.scheme == "https":
        return None
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return (f"{url!r} is plain http: Twilio and Telegram send webhooks only to https "
            "addresses and they carry people's messages; put a TLS proxy (Caddy) or a tunnel "
            "(cloudflared) in front and use its https:// address")


class _Section(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class FallbackModelSettings(_Section):
    """A model the turn goes on with when the one before it keeps failing (bot.loop.fallback)."""

    model: str = pydantic.Field(min_length=1)
    base_url: str | None = None  # None: the main model's endpoint
    # The environment variable that holds its API key (never the key itself: the file is not
    # the place for secrets); None: the main model's key on the main endpoint, none elsewhere.
    api_key_env: str | None = pydantic.Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # Whose tool-message format it reads and writes; None: its endpoint's host. Where it
    # differs from the model before it, earlier tool rounds are flattened for it.
    provider: str | None = pydantic.Field(None, min_length=1)
    timeout_seconds: float | None = pydantic.Field(None, gt=0)  # None: the main model's
    # Filled in from the environment (api_key_env) at load; never from the file.
    api_key: pydantic.SecretStr | None = pydantic.Field(default=None, exclude=True)

    @pydantic.field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return _http_base_url(value)


def _http_base_url(value: str | None) -> str | None:
    if value is not None and not re.match(r"https?://[^/\s]", value):
        raise ValueError("must be an http:// or https:// URL such as "
                         "http://localhost:11434/v1")
    return value


class LLMSettings(_Section):
    base_url: str | None = None  # None: the client's default (api.openai.com)
    model: str | None = None
    # Whose tool-message format the model reads and writes (bot.loop.fallback); None: the host of
    # base_url.
    provider: str | None = pydantic.Field(None, min_length=1)
    # Tried in order when the model keeps failing (5xx or overload, a timeout, an unknown
    # model): the turn goes on with the next one.
    fallback_models: list[FallbackModelSettings] = []
    timeout_seconds: float = pydantic.Field(60.0, gt=0)
    extra_body: dict[str, Any] = {}
    # Only from the environment (VALET_LLM_API_KEY, else OPENAI_API_KEY); never from the file.
    api_key: pydantic.SecretStr | None = pydantic.Field(default=None, exclude=True)
    # Voice notes go to the same endpoint's /audio/transcriptions with this model (None: the
    # person is told voice notes cannot be heard yet).
    transcription_model: str | None = None
    vision: bool = False  # the model can look at photos

    @property
    def configured(self) -> bool:
        return bool(self.model and (self.api_key or self.base_url))

    def api_key_value(self) -> str | None:
        """The key itself, for the one place that sends it (the LLM client)."""
        return self.api_key.get_secret_value() if self.api_key else None

    @pydantic.field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return _http_base_url(value)

    @pydantic.field_validator("extra_body")
    @classmethod
    def _no_secrets(cls, value: dict[str, Any]) -> dict[str, Any]:
        found = sorted(_secret_looking_keys(value))
        if found:
            raise ValueError(f"{', '.join(found)} looks like a secret; extra_body is written "
                             "into every request and kept in the file: put the key in "
                             "VALET_LLM_API_KEY instead")
        return value


def _secret_looking_keys(value: Any, prefix: str = "") -> list[str]:
    if not isinstance(value, dict):
        return []
    found = []
    for key, inner in value.items():
        name = f"{prefix}{key}"
        if SECRET_WORDS.search(str(key)):
            found.append(name)
        found += _secret_looking_keys(inner, f"{name}.")
    return found


class OwnerSettings(_Section):
    name: str = "owner"
    telegram_ids: list[str] = []
    phone_numbers: list[str] = []


class ApprovalSettings(_Section):
    timeout_minutes: int = pydantic.Field(30, gt=0)  # a request not answered by then expires
    # An edited request is shown again for a yes (true), or runs at once (false).
    confirm_edits: bool = True
    sweep_seconds: float = pydantic.Field(30.0, gt=0)  # how often expiries are looked for
    # A running approved action renews its lease every third of this; a lease this old means
    # its process died (the sweeper then reports it interrupted within sweep_seconds more).
    lease_seconds: float = pydantic.Field(30.0, gt=0)


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


# Loop knobs whose range is not simply "more than 0".
_LOOP_RANGES: dict[str, dict[str, float]] = {
    "llm_max_retries": {"ge": 0},
    "llm_retry_base_delay": {"ge": 0},
    "max_tool_result_share": {"gt": 0, "le": 1},
    "context_trim_threshold": {"gt": 0, "le": 1},
}


def _knobs_model(name: str, knobs: type, ranges: dict[str, dict[str, float]]
                 ) -> type[pydantic.BaseModel]:
    """A settings section checked field by field against a dataclass of knobs (one source of
    the knobs): numbers must be more than 0 unless `ranges` says otherwise."""
    hints = get_type_hints(knobs)
    spec: dict[str, Any] = {}
    for f in fields(knobs):
        kind = hints[f.name]
        # Any: Field's overloads would otherwise try each limit against every keyword
        limits: dict[str, Any] = ranges.get(f.name, {"gt": 0} if kind in (int, float) else {})
        default = f.default if f.default is not MISSING else None
        spec[f.name] = (kind, pydantic.Field(default, **limits))
    return pydantic.create_model(
        name, __config__=pydantic.ConfigDict(extra="forbid", strict=False), **spec)


def _loop_settings_model() -> type[pydantic.BaseModel]:
    """`loop:` in valet.yaml, against ReactLoopConfig."""
    return _knobs_model("LoopSettings", ReactLoopConfig, _LOOP_RANGES)


LoopSettings = _loop_settings_model()
# `delivery:` in valet.yaml: how the outbox sends (retries, batches, concurrency).
DeliverySettings = _knobs_model("DeliverySettings", DeliveryPolicy, {})


class DatabaseSettings(_Section):
    """The database's connections (the URL itself is `database_url`)."""

    # Postgres connections this process keeps (None: 10, or the URL's ?pool_size=, which
    # wins when both are given). Each running turn holds one only while a statement runs.
    pool_size: int | None = pydantic.Field(None, ge=1, le=1000)
    # Prepared statements kept per Postgres connection (asyncpg); 0 turns the cache off, as
    # a PgBouncer in transaction mode needs (or the URL's ?statement_cache_size=).
    statement_cache_size: int = pydantic.Field(512, ge=0)


class GatewaySettings(_Section):
    """How the gateway runs turns."""

    turn_attempts: int = pydantic.Field(3, ge=1)  # a turn that crashes is tried this often
    turn_retry_seconds: float = pydantic.Field(0.2, ge=0)  # x attempt, before the next try
    history_messages: int = pydantic.Field(200, ge=1)  # loaded per turn (the view trims)
    # Redis per-user lease, renewed every third of it: a killed worker's people wait this
    # long at most before another worker runs their turns.
    user_lock_ttl_seconds: float = pydantic.Field(6.0, gt=0)
    # The work stream (several processes): an entry a worker held this long without touching
    # it belongs to a dead worker and is taken over; every sweep_seconds each worker looks in
    # the inbox for messages no entry named (bot.gateway.sweep).
    claim_idle_seconds: float = pydantic.Field(4.0, gt=0)
    sweep_seconds: float = pydantic.Field(5.0, gt=0)
    http_timeout_seconds: float = pydantic.Field(30.0, gt=0)  # the tools' shared session
    # A message the person sends while their turn runs: "steer" adds it to that turn before
    # its next LLM call ("actually, make it Tuesday"); "queue" answers it in a turn of its own
    # once the running one has ended.
    mid_turn: Literal["steer", "queue"] = "steer"


class SmsSettings(_Section):
    """SMS over Twilio. Credentials come only from the environment (VALET_TWILIO_ACCOUNT_SID,
    VALET_TWILIO_AUTH_TOKEN)."""

    from_number: str | None = None  # Valet's Twilio number, E.164
    messaging_service_sid: str | None = None  # or a Messaging Service (MG...) instead
    # Numbers written without a country code (allowlists, owner numbers) are read as this
    # country's (ISO code, e.g. "US", "GB"); None: every number must start with "+".
    default_region: str | None = None
    max_request_bytes: int = pydantic.Field(64 * 1024, ge=1024)  # a webhook body, at most
    # A triggered run's reply by SMS (the morning summary) fits this many segments: a longer
    # one gets one shortening pass, then is cut after its last whole sentence that fits.
    summary_max_segments: int = pydantic.Field(2, ge=1, le=10)


class TriggerSettings(_Section):
    """Scheduled tasks, events and conditions (triggers/)."""

    enabled: bool = True
    # Every process's engine wakes this often: the leader renews its lease (and settles
    # approvals), a follower tries to take the lease over.
    heartbeat_seconds: float = pydantic.Field(15.0, gt=0)
    # A leader that stops renewing (killed, frozen) is replaced once this has passed since its
    # last renewal: the takeover comes within lease_seconds + heartbeat_seconds.
    lease_seconds: float = pydantic.Field(45.0, gt=0)
    # Budgets for lasting work (triggers/budget.py), per person other than the owner: tasks set
    # up at once, and minutes between two runs of a task that asks the LLM (plain reminders
    # need no LLM and may be more frequent). 0: no limit.
    max_active_tasks: int = pydantic.Field(20, ge=0)
    min_llm_interval_minutes: float = pydantic.Field(15.0, ge=0)
    # The same for the owner (no limit unless set).
    owner_max_active_tasks: int = pydantic.Field(0, ge=0)
    # An event task runs at most once this often: a burst's later events are held and go to
    # one run when the window ends (0: every event its own run).
    event_window_seconds: float = pydantic.Field(60.0, ge=0)
    owner_min_llm_interval_minutes: float = pydantic.Field(0.0, ge=0)

    @pydantic.model_validator(mode="after")
    def _renewed_before_it_runs_out(self) -> TriggerSettings:
        # A lease renewed less often than twice per length lapses at the first slow beat, and
        # the processes take the schedule from each other over and over.
        if self.heartbeat_seconds * 2 > self.lease_seconds:
            raise ValueError(
                f"heartbeat_seconds ({self.heartbeat_seconds:g}) must be at most half of "
                f"lease_seconds ({self.lease_seconds:g}): the leader renews its lease at each "
                "heartbeat, and a lease that runs out between two lets another process take "
                "over from a leader that is alive")
        return self
class MemorySettings(_Section):
    """Long-term memory (bot/memory): recall before each turn, extraction after it."""

    enabled: bool = True
    # Embeddings from the LLM endpoint's /embeddings with this model (None: keywords and
    # recency only).
    embedding_model: str | None = pydantic.Field(None, min_length=1)
    extraction_model: str | None = pydantic.Field(None, min_length=1)  # None: llm.model
    recall_budget_tokens: int = pydantic.Field(300, gt=0, le=4000)


class ContactsSettings(_Section):
    """The address book and messages to other people (agents/contacts)."""

    # Messages a person may have Valet send to other people in any 24 hours (each approved).
    max_messages_per_day: int = pydantic.Field(20, ge=0, le=1000)


class HTTPSettings(_Section):
    """Where `valet serve` listens (webhooks, health checks)."""

    host: str = "127.0.0.1"
    port: int = pydantic.Field(8080, ge=0, le=65535)
    # On SIGTERM, how long running turns get to finish (the rest is redone at the next start).
    shutdown_grace_seconds: float = pydantic.Field(20.0, ge=0)
    # A request body (a webhook, an event) that has not fully arrived by then is refused
    # (408): a client that sends half a body does not hold a connection open.
    body_timeout_seconds: float = pydantic.Field(10.0, gt=0)


class ConsoleSettings(_Section):
    """The owner's web console at /console (bot/app/console), served by `valet serve`."""

    enabled: bool = False
    # The address the owner's browser opens (login links start with it); None: public_url,
    # else this machine's http.host and http.port (reached through an SSH tunnel).
    url: str | None = None
    session_hours: float = pydantic.Field(12.0, gt=0, le=24 * 30)  # then sign in again
    # The Usage page's estimate: what one SMS segment costs (Twilio's price for your country).
    sms_price_per_segment: float = pydantic.Field(0.0083, ge=0)
    currency: str = pydantic.Field("USD", min_length=1, max_length=8)
    # Sign-in attempts one address may make in a window (a used or unknown link counts).
    login_attempts: int = pydantic.Field(10, gt=0)
    login_window_minutes: int = pydantic.Field(15, gt=0)

    @pydantic.field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+/?$", value):
            raise ValueError("must be the console's base address, such as "
                             "https://valet.example.com or http://127.0.0.1:8080")
        return value.rstrip("/") if value else value


class TelegramSettings(_Section):
    mode: Literal["polling", "webhook"] = "polling"
    groups: bool = False  # answer in groups (only when mentioned or replied to)
    # Webhook mode: the public https URL Telegram posts to (…/telegram/webhook is added);
    # None: the server's public_url.
    webhook_url: str | None = None
    # Only from the environment: VALET_TELEGRAM_TOKEN (turns the channel on),
    # VALET_TELEGRAM_WEBHOOK_SECRET, VALET_TELEGRAM_API_URL (another Bot API server).
    token: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    webhook_secret: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    api_url: str | None = pydantic.Field(default=None, exclude=True)

    @pydantic.field_validator("webhook_url")
    @classmethod
    def _webhook_over_https(cls, value: str | None) -> str | None:
        problem = plain_http_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value
