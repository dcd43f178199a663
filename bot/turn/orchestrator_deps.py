"""The orchestrator's ports, stores, steps and settings, and the work started after a turn.

OrchestratorDeps is what the orchestrator is built with; AfterTurn, work started once a turn
is stored. The composition root (bot.app.turn) fills them; bot.turn.orchestrator runs a turn
with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import aiohttp

from bot.approvals.flow import ApprovalFlow
from bot.capabilities import ToolExposure
from bot.capability_router import CapabilityRouter
from bot.channel import ChannelSender
from bot.config.policies import ReactLoopConfig
from bot.contracts.clock import Clock
from bot.contracts.turn import ComposedTurn, Step, TurnContext
from bot.llm.port import LLM
from bot.loop.fallback import ModelSlot
from bot.loop.journal import TurnJournal
from bot.memory.history import HistoryStore
from bot.memory.summaries import SummaryStore
from bot.people.ratelimit import SlidingWindowLimiter
from bot.people.users import UserStore
from bot.plumbing.metrics import Metrics
from bot.tasks.resume import Resumer
from bot.tools import ToolRegistry
from bot.turn.telemetry import TranscriptWriter
from bot.turn.trace_store import TraceStore
from bot.turn.usage import UsageStore
from persona import Persona


@dataclass(frozen=True)
class AfterTurn:
    """Work started once a turn is stored, never waited for (memory extraction, compaction).
    `after_small_talk`: False for work a greeting or a thanks gives nothing to (learning)."""

    run: Callable[[TurnContext, ComposedTurn], None]
    after_small_talk: bool = True


@dataclass
class OrchestratorDeps:
    llm: LLM
    registry: ToolRegistry
    history: HistoryStore
    users: UserStore
    persona: Persona
    clock: Clock
    loop_config: ReactLoopConfig = field(default_factory=ReactLoopConfig)
    limiter: SlidingWindowLimiter | None = None
    transcripts: TranscriptWriter = field(default_factory=lambda: TranscriptWriter(None))
    # What tools may use (agents.services.Services), passed through without a look inside.
    tool_services: object = None
    # The channels replies go out on, by name (filled as they start): what brief means there.
    channels: Mapping[str, ChannelSender] = field(default_factory=dict)
    http: aiohttp.ClientSession | None = None  # shared by the tools
    steps: list[Step] = field(default_factory=list)  # before the loop (bot.turn.order)
    approvals: ApprovalFlow | None = None  # the loop's gate; opens the turn's requests
    tasks: Resumer | None = None  # stores the tasks that paused this turn
    journal: TurnJournal | None = None  # a redone turn continues from it (bot.loop.journal)
    exposure: ToolExposure | None = None  # capabilities: tools shown when needed
    # Opens the capabilities a message names before the first request (with `exposure`).
    router: CapabilityRouter | None = None
    # Called with the stored turn before the reply goes out; each only schedules its work
    # (memory extraction runs in the background), so none may delay the reply.
    after_turn: list[AfterTurn] = field(default_factory=list)
    metrics: Metrics = field(default_factory=Metrics)  # turns and tool calls counted (/metrics)
    traces: TraceStore | None = None  # what each turn did, for /debug and `valet turns`
    # The running summary of older messages (bot.memory.compaction): a turn loads the latest
    # and only the messages after it.
    summaries: SummaryStore | None = None
    provider: str = ""  # whose tool-message format `llm` reads and writes (bot.loop.fallback)
    fallbacks: tuple[ModelSlot, ...] = ()  # the turn goes on with these when `llm` fails
    usage: UsageStore | None = None  # tokens and requests per turn (the owner's console)
