"""Prometheus metrics: the one place that owns the registry and every metric object.

Each App owns a `Metrics` with its own `CollectorRegistry` (never the library's global one), so
several Apps in one process (the tests) never share or double-register a metric. The parts of
Valet report through one-line calls (`turn_finished`, `tools_ran`, `routed`, `llm_request`,
`webhook`, `scheduler_fired`); what the database already knows (outbox depth, dead letters,
approvals, SMS segments, people active today) is read from the stores at scrape time
(bot.app.observe) and handed to `refresh`, so it is true across processes and restarts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

# Seconds; a turn with tools and an LLM that thinks can take a minute.
TURN_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
LLM_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120)
LAG_BUCKETS = (0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900)


class _ToolCall(Protocol):
    name: str
    outcome: str


@dataclass(frozen=True)
class Readings:
    """What the stores say at a scrape: each store counts its own rows."""

    at: datetime
    waiting: Mapping[str, Waiting]  # by channel: pending or sending
    dead: Mapping[str, int]  # dead letters by channel
    approvals: Mapping[str, int]  # by status
    people_today: int  # who wrote today, in the deployment's timezone
    channels: tuple[Reading, ...] = ()  # what each channel counts of its own (its spec's)


@dataclass(frozen=True)
class Reading:
    """A gauge a channel adds, read at each scrape (SMS: the segments handed to Twilio)."""

    name: str  # "valet_sms_segments_sent"
    help: str
    value: float


class Metrics:
    """Every metric Valet exports, on a registry of its own."""

    content_type = CONTENT_TYPE_LATEST  # what `render` gives, for the Content-Type header

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        r = self.registry
        self.turns = Counter("valet_turns", "Turns finished, by how they stopped",
                             ["stop"], registry=r)
        self.turn_seconds = Histogram("valet_turn_duration_seconds",
                                      "Time from a message's turn start to its reply",
                                      buckets=TURN_BUCKETS, registry=r)
        self.llm_requests = Counter("valet_llm_requests", "LLM requests, by model",
                                    ["model"], registry=r)
        self.llm_seconds = Histogram("valet_llm_request_duration_seconds",
                                     "LLM request latency, by model", ["model"],
                                     buckets=LLM_BUCKETS, registry=r)
        self.llm_tokens = Counter("valet_llm_tokens", "Tokens used, by model and direction",
                                  ["model", "direction"], registry=r)
        self.llm_errors = Counter("valet_llm_errors", "LLM requests that failed, by error",
                                  ["model", "error"], registry=r)
        self.tool_calls = Counter("valet_tool_calls", "Tool calls, by tool and outcome",
                                  ["tool", "outcome"], registry=r)
        self.turn_modes = Counter("valet_turn_modes", "Turns that ran the loop, by mode "
                                  "(simple: without tool schemas; react: with them)",
                                  ["mode"], registry=r)
        self.model_switches = Counter("valet_llm_model_switches", "Turns that went on with a "
                                      "fallback model, by the model left and the one taken",
                                      ["from_model", "to_model"], registry=r)
        self.router_opened = Counter("valet_router_opened", "Capabilities the router opened "
                                     "before a turn's first request, from the person's words",
                                     ["capability"], registry=r)
        self.router_misses = Counter("valet_router_misses", "Capabilities the model had to "
                                     "open itself (the router had not): one LLM request more",
                                     ["capability"], registry=r)
        self.webhooks = Counter("valet_webhook_requests",
                                "Webhook requests: acknowledged (2xx), rejected (4xx: bad "
                                "signature or secret, too large) or unavailable (5xx)",
                                ["channel", "result"], registry=r)
        self.scheduler_lag = Histogram("valet_scheduler_lag_seconds",
                                       "From a scheduled run's due time to its firing",
                                       buckets=LAG_BUCKETS, registry=r)
        # Read from the database at scrape time (refresh).
        self.outbox_depth = Gauge("valet_outbox_depth", "Messages waiting to be sent",
                                  ["channel"], registry=r)
        self.outbox_oldest = Gauge("valet_outbox_oldest_age_seconds",
                                   "Age of the oldest message waiting to be sent",
                                   ["channel"], registry=r)
        self.dead_letters = Gauge("valet_outbox_dead_letters",
                                  "Messages given up on (dead-lettered), all time",
                                  ["channel"], registry=r)
        self.approvals = Gauge("valet_approvals", "Approval requests, by outcome (status)",
                               ["outcome"], registry=r)
        self._channel_gauges: dict[str, Gauge] = {}  # made at the first scrape that has them
        self.users_today = Gauge("valet_users_active_today",
                                 "People who wrote to Valet since midnight (the deployment's "
                                 "timezone)", registry=r)

    # --- reported as it happens ---------------------------------------------------------------

    def _child(self, metric: Any, *values: str) -> Any:
        """`metric.labels(*values)`, kept: several are counted every turn, and the library
        checks the labels and looks the child up again on each call."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def turn_finished(self, stop: Any, seconds: float) -> None:
        """One turn, its stop reason (a TurnStop or a word) and how long it took."""
        self._child(self.turns, str(getattr(stop, "value", stop) or "none")).inc()
        self.turn_seconds.observe(seconds)

    def tools_ran(self, calls: Iterable[_ToolCall]) -> None:
        for call in calls:
            self._child(self.tool_calls, call.name, call.outcome or "unknown").inc()

    def loop_ran(self, mode: str, switches: Iterable[tuple[str, str]] = ()) -> None:
        """A turn's loop: its mode, and each switch to a fallback model (from, to)."""
        self._child(self.turn_modes, mode).inc()
        for left, taken in switches:
            self.model_switches.labels(from_model=left, to_model=taken).inc()

    def routed(self, opened: Iterable[str], missed: Iterable[str]) -> None:
        """A turn's capability route: what it opened, and what the model opened itself."""
        for capability in opened:
            self.router_opened.labels(capability=capability).inc()
        for capability in missed:
            self.router_misses.labels(capability=capability).inc()

    def llm_request(self, model: str, seconds: float, *, input_tokens: int = 0,
                    output_tokens: int = 0, error: str | None = None,
                    requests: int = 1) -> None:
        self._child(self.llm_requests, model).inc(requests)
        self._child(self.llm_seconds, model).observe(seconds)
        if input_tokens:
            self._child(self.llm_tokens, model, "input").inc(input_tokens)
        if output_tokens:
            self._child(self.llm_tokens, model, "output").inc(output_tokens)
        if error is not None:
            self.llm_errors.labels(model=model, error=error).inc()

    def webhook(self, channel: str, status: int) -> None:
        result = "acknowledged" if status < 400 else "rejected" if status < 500 \
            else "unavailable"
        self.webhooks.labels(channel=channel, result=result).inc()

    def scheduler_fired(self, due: datetime, fired: datetime) -> None:
        self.scheduler_lag.observe(max((fired - due).total_seconds(), 0.0))

    # --- read at scrape time ------------------------------------------------------------------

    def refresh(self, readings: Readings) -> None:
        """The gauges the database knows, as of a scrape (bot.app.observe reads them)."""
        _set(self.outbox_depth, {c: q.count for c, q in readings.waiting.items()})
        _set(self.outbox_oldest, {c: _age(readings.at, q.oldest)
                                  for c, q in readings.waiting.items()})
        _set(self.dead_letters, dict(readings.dead))
        _set(self.approvals, dict(readings.approvals))
        for reading in readings.channels:
            gauge = self._channel_gauges.get(reading.name)
            if gauge is None:
                gauge = Gauge(reading.name, reading.help, registry=self.registry)
                self._channel_gauges[reading.name] = gauge
            gauge.set(reading.value)
        self.users_today.set(readings.people_today)

    def total(self, name: str, **labels: str) -> float:
        """A counter's value in this process, summed over the labels not given
        (`total("valet_llm_requests")`, `total("valet_llm_errors", model="m")`)."""
        found = 0.0
        for metric in self.registry.collect():
            for sample in metric.samples:
                if sample.name == f"{name}_total" and all(
                        sample.labels.get(k) == v for k, v in labels.items()):
                    found += sample.value
        return found

    def render(self) -> bytes:
        return generate_latest(self.registry)


def start_of_day(now: datetime, timezone: str) -> datetime:
    """Midnight of `now`'s day in `timezone`, as an aware datetime."""
    zone = ZoneInfo(timezone)
    local = now.astimezone(zone)
    midnight = datetime.combine(local.date(), time(0), tzinfo=zone)
    return midnight if midnight <= local else midnight - timedelta(days=1)


def _age(now: datetime, oldest: datetime | str | None) -> float:
    """Seconds since `oldest` (SQLite gives an aggregate's time back as text)."""
    if oldest is None:
        return 0.0
    at = datetime.fromisoformat(oldest) if isinstance(oldest, str) else oldest
    return max((now - at).total_seconds(), 0.0)


def _set(gauge: Gauge, values: dict[str, float]) -> None:
    """Labels that disappeared (a channel whose queue emptied) go too."""
    gauge.clear()
    for label, value in values.items():
        gauge.labels(label).set(value)


@dataclass(frozen=True)
class Waiting:
    count: int
    oldest: datetime | str | None  # SQLite gives an aggregate's time back as text
