"""The sections of `valet.yaml` (one model each) and the knob sections generated from their
dataclasses (`loop:`, `delivery:`); `bot.config` puts them together and loads the file.

`Section` is the base of every section; those of the model (`llm:`) and of the ways in (`sms:`,
`telegram:`, `http:`, `console:`) are in llm_sections.py and channel_sections.py."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from typing import Any, Literal, get_type_hints

import pydantic

from bot.config.policies import DeliveryPolicy, ReactLoopConfig


class Section(pydantic.BaseModel):
    """A section of valet.yaml: a key it does not know is a mistake, not ignored."""

    model_config = pydantic.ConfigDict(extra="forbid")


class OwnerSettings(Section):
    name: str = "owner"
    telegram_ids: list[str] = []
    phone_numbers: list[str] = []


class ApprovalSettings(Section):
    timeout_minutes: int = pydantic.Field(30, gt=0)  # a request not answered by then expires
    sweep_seconds: float = pydantic.Field(30.0, gt=0)  # how often expiries are looked for
    # A running approved action renews its lease every third of this; a lease this old means
    # its process died (the sweeper then reports it interrupted within sweep_seconds more).
    lease_seconds: float = pydantic.Field(30.0, gt=0)


class AgentsSettings(Section):
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
    "subtask_max_per_turn": {"gt": 0, "le": 20},
    "subtask_concurrency": {"gt": 0, "le": 10},
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


class DatabaseSettings(Section):
    """The database's connections (the URL itself is `database_url`)."""

    # Postgres connections this process keeps (None: 10, or the URL's ?pool_size=, which
    # wins when both are given). Each running turn holds one only while a statement runs.
    pool_size: int | None = pydantic.Field(None, ge=1, le=1000)
    # Prepared statements kept per Postgres connection (asyncpg); 0 turns the cache off, as
    # a PgBouncer in transaction mode needs (or the URL's ?statement_cache_size=).
    statement_cache_size: int = pydantic.Field(512, ge=0)


class GatewaySettings(Section):
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


class PairingSettings(Section):
    """What the owner hears of strangers asking to be let in."""

    # At most one message about new pairing requests per this many minutes: the first at once,
    # later ones gathered (each with its code) into the next.
    notice_minutes: float = pydantic.Field(10.0, gt=0)


class BudgetSettings(Section):
    """A daily allowance per person, in US dollars: LLM tokens at `llm.prices` and SMS at
    `sms.price_per_segment`. Reached, a person's further messages wait for the next day (in
    their timezone) or for the owner to raise it (`valet budget raise`, the console)."""

    daily_usd: float = pydantic.Field(0.50, ge=0)  # everyone but the owner; 0: no allowance
    owner_daily_usd: float | None = pydantic.Field(None, gt=0)  # None: the owner has none
    # How often waiting messages are looked at again (a new day, a raised allowance).
    check_seconds: float = pydantic.Field(30.0, gt=0)


class TriggerSettings(Section):
    """Scheduled tasks, events and conditions (triggers/)."""

    enabled: bool = True
    # Every process's engine wakes this often: the leader renews its lease (and settles
    # approvals), a follower tries to take the lease over.
    heartbeat_seconds: float = pydantic.Field(15.0, gt=0)
    # A leader that stops renewing (killed, frozen) is replaced once this has passed since its
    # last renewal: the takeover comes within lease_seconds + heartbeat_seconds.
    lease_seconds: float = pydantic.Field(45.0, gt=0)
    # Limits of lasting work (triggers/task_limits.py), per person other than the owner: tasks set
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


class MemorySettings(Section):
    """Long-term memory (bot/memory): recall before each turn, extraction after it."""

    enabled: bool = True
    # Embeddings from the LLM endpoint's /embeddings with this model (None: keywords and
    # recency only).
    embedding_model: str | None = pydantic.Field(None, min_length=1)
    extraction_model: str | None = pydantic.Field(None, min_length=1)  # None: llm.model
    recall_budget_tokens: int = pydantic.Field(300, gt=0, le=4000)


class ContactsSettings(Section):
    """The address book and messages to other people (agents/contacts)."""

    # Messages a person may have Valet send to other people in any 24 hours (each approved).
    max_messages_per_day: int = pydantic.Field(20, ge=0, le=1000)
