"""The composition root: the one place that knows every part, builds them in order and
closes them in reverse."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import aiohttp

from agents.email.delivery import MailDelivery
from agents.registry import Registry
from agents.services import Services
from bot.app.approvals import build_approvals
from bot.app.base import open_base
from bot.app.budget import build_budget, pairing_notice_loop_seconds
from bot.app.database import pending
from bot.app.inbound import TurnParts, build_gateway
from bot.app.memory import Memory, build_memory
from bot.app.models import build_transcriber
from bot.app.outbound import build_outbound
from bot.app.owner import ensure_owner
from bot.app.plane import Plane
from bot.app.roles import Roles
from bot.app.services import build_mail, build_services
from bot.app.stores import build_stores
from bot.app.triggers import build_engine, build_tasks
from bot.app.turn import build_turn
from bot.approvals.flow import ApprovalFlow
from bot.approvals.store import ApprovalStore
from bot.approvals.sweeper import ApprovalSweeper
from bot.channel import ChannelSender
from bot.config import Settings
from bot.contracts.clock import Clock, SystemClock
from bot.contracts.people import User
from bot.db import Database
from bot.db.sqlite_owner import SQLiteOwner, claim
from bot.gateway.budget import BudgetGate
from bot.gateway.door import ChannelHost
from bot.gateway.gateway import Gateway
from bot.gateway.outbound import Outbound
from bot.gateway.sweep import InboxSweep, SweepPolicy
from bot.llm.person_first import PersonFirst
from bot.llm.port import LLM
from bot.llm.server_props import server_slots
from bot.llm.transcribe import Transcriber
from bot.memory.compaction import Compactor
from bot.memory.history import HistoryStore
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.plumbing.metrics import Metrics
from bot.plumbing.offload import shutdown as stop_offload_workers
from bot.plumbing.stall import StallMonitor
from bot.tasks.pool import AgentPool
from bot.tools.registry import ToolRegistry
from bot.turn.commands import Commands
from bot.turn.orchestrator import Orchestrator
from persona import Persona
from triggers.event_store import StoredEventBus
from triggers.wiring import Triggers, answer_run_now

log = logging.getLogger(__name__)


@dataclass
class App:
    settings: Settings
    db: Database
    clock: Clock
    llm: LLM
    persona: Persona
    agents: Registry
    users: UserStore
    identities: IdentityStore
    access: AccessControl
    history: HistoryStore
    pool: AgentPool
    approvals: ApprovalFlow
    sweeper: ApprovalSweeper
    services: Services  # what tools and agents may use
    orchestrator: Orchestrator
    commands: Commands  # the command table: the turn's first step, channels' menus
    outbound: Outbound  # the outbox, its deliverer, notifications
    gateway: Gateway  # the inbound path: inbox, access, one turn at a time per person
    triggers: Triggers
    http: aiohttp.ClientSession
    memory: Memory | None = None  # long-term memory; None when turned off
    compactor: Compactor | None = None  # old messages folded into a running summary
    transcriber: Transcriber | None = None  # llm.transcription_model; None: voice not heard
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    stall_monitor: StallMonitor | None = None
    _owner: SQLiteOwner | None = None
    metrics: Metrics = field(default_factory=Metrics)  # /metrics: this App's own registry
    roles: Roles = field(default_factory=lambda: Roles.of(None))  # the parts this process runs
    plane: Plane | None = None  # how work and signals reach other processes (bot.app.plane)
    _background: list[asyncio.Task[None]] = field(default_factory=list)
    # Turns before background LLM work (bot.llm.person_first): its server's slots asked at
    # start when llm.concurrency does not say.
    person_first: PersonFirst | None = None

    @property
    def registry(self) -> ToolRegistry:
        return self.agents.tools

    @property
    def approval_store(self) -> ApprovalStore:
        return self.approvals.store

    @property
    def mail(self) -> MailDelivery:
        return self.services.mail

    @property
    def events(self) -> StoredEventBus:
        """POST /events: stored, then the schedulers are told."""
        return self.triggers.bus

    @property
    def whole(self) -> App:
        """Every part (bot.app.serve.Served.whole): this process has them all."""
        return self

    @property
    def budget(self) -> BudgetGate | None:
        """What people spend and may spend a day; their messages held at it."""
        return self.gateway.deps.budget

    @classmethod
    async def build(cls, settings: Settings, *, llm: LLM | None = None,
                    clock: Clock | None = None, migrate: bool | Literal["check"] = True,
                    db: Database | None = None, roles: Roles | None = None,
                    serving: bool = False) -> App:
        """Every part, in the order they need each other: stores, the outbound side, the
        services tools use, the turn, the inbound gateway, then the trigger engine (which
        puts runs into the gateway's queue). `migrate`: apply pending migrations (True) or
        refuse an old schema ("check"); see bot.app.roles.migrates_on_start. `db`: a database
        already open (a bench's statement counter around it); App closes it. `roles`: the
        parts `start` runs (bot.app.roles); `serving`: a `valet serve` process, which hands
        its stored rows to the work stream when Redis is configured (bot.app.plane)."""
        base = await open_base(settings, clock=clock or SystemClock(), llm=llm, migrate=migrate,
                               db=db, roles=roles or Roles.of(None), serving=serving)
        stores = build_stores(base)
        outbound = build_outbound(base, stores)
        mail = build_mail(base, stores, outbound)
        approvals = build_approvals(base, stores, outbound, mail)
        tasks = build_tasks(base, stores, outbound)
        memory = build_memory(settings, base.db, base.clock, base.llm, lines=base.persona.lines,
                              gate=base.models.gate)
        services = build_services(base, stores, outbound, tasks, mail, memory)
        budget = build_budget(base, stores, outbound)  # what a person may spend a day
        turn = await build_turn(base, stores, outbound, approvals, tasks, memory, services,
                                budget)
        transcriber = build_transcriber(settings)  # voice notes, heard when their turn runs
        gateway = build_gateway(base, stores, outbound, approvals.step.answer_button, TurnParts(
            handle_message=turn.orchestrator.handle_message,
            answers_approval=approvals.step.answers_pending, silenced=tasks.silenced,
            budget=budget, transcriber=transcriber, person_first=base.models.gate))
        triggers = build_engine(base, gateway, outbound, tasks, services, turn.exposure)
        app = cls(settings=settings, db=base.db, clock=base.clock, llm=base.llm,
                  persona=base.persona, agents=base.agents, users=stores.users,
                  identities=stores.identities, access=stores.access, history=stores.history,
                  pool=stores.pool, approvals=approvals.flow, sweeper=approvals.sweeper,
                  services=services, orchestrator=turn.orchestrator, commands=turn.commands,
                  outbound=outbound, gateway=gateway, triggers=triggers, http=base.http,
                  memory=memory, compactor=turn.compactor, closers=base.closers,
                  metrics=base.metrics, transcriber=transcriber, roles=base.roles,
                  plane=base.plane, person_first=base.models.gate)
        if pending(app.db) is None:  # else once `valet serve` has reached it
            await app.ensure_owner()
        return app

    def channel_host(self) -> ChannelHost:
        """What a channel may use of Valet (never the App itself)."""
        budget = self.budget
        return ChannelHost(door=self.gateway, identities=self.identities, clock=self.clock,
                           db=self.db, lines=self.persona.lines, words=self.persona.words,
                           commands=self.commands,
                           spending=budget.spending if budget else None,
                           health=self.outbound)

    def add_channel(self, sender: ChannelSender) -> None:
        """Register a channel's sender: the outbox delivers its messages through it."""
        self.outbound.add_channel(sender)

    async def ensure_owner(self) -> User:
        """The owner from configuration, reachable on the console and their listed ids."""
        return await ensure_owner(self.settings, self.users, self.identities, self.clock)

    async def start(self) -> None:
        """Start this process's parts (`roles`). On SQLite this process must be the file's
        only one (raises DatabaseInUse, a ConfigError, otherwise). A worker first settles
        approvals a dead process left approved or executing as interrupted (their owners
        told), then runs turns: its own drains, the work stream and the inbox sweep with
        Redis. A scheduler runs the trigger engine and answers run-now."""
        self._owner = claim(self.settings.database_url)
        self.stall_monitor = StallMonitor(self.settings.stall_warning_ms / 1000)
        self.stall_monitor.start()
        if self.roles.worker:
            await self._start_worker()
        if self.roles.scheduler and self.settings.triggers.enabled:
            await self.triggers.start()
            from bot.work.control import RedisSignals

            if self.plane is not None and isinstance(self.plane.signals, RedisSignals):
                answer_run_now(self.triggers.engine, self.plane.signals)
        if self.plane is not None:
            start = getattr(self.plane.signals, "start", None)
            if start is not None:  # Redis: hear the other processes' signals
                await start()

    async def _start_worker(self) -> None:
        gate = self.person_first
        if gate is not None and gate.concurrency is None:
            gate.concurrency = await server_slots(self.settings.llm.base_url, self.http)
        await self.sweeper.start(sole_owner=self.db.dialect == "sqlite")
        await self.gateway.start()
        notices = self.gateway.deps.pairing_notices
        if notices is not None:  # requests that waited for the owner's notice window
            self._background.append(asyncio.create_task(
                notices.run(pairing_notice_loop_seconds(self.settings))))
        if self.budget is not None:  # messages waiting at an allowance: a new day, a raise
            self._background.append(asyncio.create_task(self.budget.run(
                self.gateway.kick, self.settings.budget.check_seconds)))
        if self.memory is not None:  # retries of failed extractions
            self.memory.start()
        # Queued mail goes out; outcomes are told.
        self.mail.start(sole_owner=self.db.dialect == "sqlite")
        plane = self.plane
        if plane is None or plane.stream is None:
            return
        signals, gateway, deliverer = plane.signals, self.gateway, self.outbound.deliverer
        signals.listen("stop", gateway.running.stop_heard)
        signals.listen("steer", gateway.running.steer_heard)

        async def wake(fields: dict[str, str]) -> None:
            if fields.get("channel") and fields.get("address"):
                deliverer.wake_address(fields["channel"], fields["address"])
            else:
                deliverer.wake()

        signals.listen("wake", wake)
        await plane.stream.start(gateway.kick)
        sweep = InboxSweep(gateway.deps.inbox, self.clock, gateway.kick, SweepPolicy(
            every_seconds=self.settings.gateway.sweep_seconds,
            after_seconds=self.settings.gateway.sweep_seconds))
        self._background.append(asyncio.create_task(sweep.run()))

    async def sweep_approvals(self) -> None:
        """One pass of the approval sweeper (bot.approvals.sweeper), its notices told."""
        await self.sweeper.sweep_and_tell()

    async def release_held(self) -> list[str]:
        """People at their allowance whose messages may go now (a new day, a raise): their
        queues are kicked."""
        return await self.budget.release(self.gateway.kick) if self.budget is not None else []

    async def close(self) -> None:
        await self.triggers.stop()  # stop firing first
        await self.mail.close()  # an attempt under way may finish; its outcome is told
        await self.sweeper.stop()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.plane is not None and self.plane.stream is not None:
            await self.plane.stream.stop()  # what it holds is taken over by another worker
        await self.gateway.stop()
        await self.agents.close()  # MCP servers' sessions (their processes end)
        if self.compactor is not None:
            await self.compactor.close()
        if self.memory is not None:
            await self.memory.close()
        if self.stall_monitor is not None:
            await self.stall_monitor.stop()
        stop_offload_workers()
        for closer in self.closers:
            await closer()
        await self.http.close()
        if self.transcriber is not None:
            await self.transcriber.close()
        await self.llm.close()
        await self.db.close()
        if self._owner is not None:
            self._owner.release()
