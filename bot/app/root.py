"""The composition root: the one place that knows every part, builds them in order and
closes them in reverse."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

import aiohttp

from agents.email.delivery import MailDelivery
from agents.registry import Registry, load_registry
from agents.services import Services
from agents.stores import AgentStores
from bot.app.console.command import console_command
from bot.app.database import open_database
from bot.app.models import build_models, build_transcriber
from bot.app.owner import CONSOLE_ADDRESS as CONSOLE_ADDRESS  # re-exported
from bot.app.owner import OWNER_ID as OWNER_ID
from bot.app.owner import access_with_claims, ensure_owner
from bot.app.parts import (
    TriggerDoor,
    build_mail,
    build_outbound,
    can_edit_cards,
    holdings,
    message_effects,
    pairing_outcomes,
    task_budgets,
    task_listing,
    tell_owner,
)
from bot.app.plane import Plane, build_plane
from bot.app.roles import Roles
from bot.approvals.decide import ApprovalStep
from bot.approvals.flow import ApprovalFlow
from bot.approvals.outcomes import card_outcomes
from bot.approvals.store import ApprovalStore
from bot.approvals.sweeper import ApprovalSweeper, Notice
from bot.capabilities import build_exposure
from bot.capability_router import CapabilityRouter
from bot.config import Settings
from bot.config.registries import registry_paths
from bot.contracts.envelopes import (
    Notification,
    PromptKind,
    Urgency,
)
from bot.credentials import CredentialStore
from bot.db import Database
from bot.db.sqlite_owner import SQLiteOwner, claim
from bot.gateway.access import AccessControl
from bot.gateway.console_login import ConsoleLogins
from bot.gateway.delivery import ChannelSender
from bot.gateway.door import ChannelHost
from bot.gateway.gateway import Gateway, GatewayDeps
from bot.gateway.identity import IdentityStore
from bot.gateway.inbox import InboxStore
from bot.gateway.others import OutboxMessenger
from bot.gateway.outbound import Outbound
from bot.gateway.ratelimit import SlidingWindowLimiter
from bot.gateway.users import User, UserStore
from bot.llm.port import LLM
from bot.llm.transcribe import Transcriber
from bot.loop.journal import TurnJournal
from bot.loop.subtasks import Subtasks
from bot.memory.compaction import Compactor
from bot.memory.history import HistoryStore
from bot.memory.summaries import SummaryStore
from bot.memory.wiring import Memory, build_memory
from bot.plumbing.clock import Clock, SystemClock
from bot.plumbing.metrics import Metrics
from bot.plumbing.offload import shutdown as stop_offload_workers
from bot.plumbing.stall import StallMonitor
from bot.tasks.pool import AgentPool
from bot.tasks.resume import Resumer
from bot.tools import ToolRegistry
from bot.turn.commands import Command, Commands
from bot.turn.context_steps import AskTimezoneOnce, ContextStep
from bot.turn.media import MediaReader
from bot.turn.orchestrator import Orchestrator, OrchestratorDeps
from bot.turn.order import TurnSteps
from bot.turn.telemetry import TranscriptWriter
from bot.turn.trace_store import TraceStore, debug_command
from bot.turn.usage import UsageStore
from bot.work.sweep import InboxSweep, SweepPolicy
from persona import Persona, load_persona
from triggers.engine import EngineSettings
from triggers.wiring import (
    Triggers,
    answer_run_now,
    budget_check,
    build_task_service,
    build_triggers,
)

log = logging.getLogger(__name__)



def build_agents(settings: Settings) -> Registry:
    """The registry files (agents/registry.yaml, then the deployment's), checked."""
    paths = registry_paths(settings.agents.registries, settings.config_dir())
    return load_registry(paths, settings.tools)



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
    _sweeper: asyncio.Task[None] | None = None
    _owner: SQLiteOwner | None = None
    metrics: Metrics = field(default_factory=Metrics)  # /metrics: this App's own registry
    roles: Roles = field(default_factory=lambda: Roles.of(None))  # the parts this process runs
    plane: Plane | None = None  # how work and signals reach other processes (bot.app.plane)
    _background: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def registry(self) -> ToolRegistry:
        return self.agents.tools

    @property
    def approval_store(self) -> ApprovalStore:
        return self.approvals.store

    @property
    def mail(self) -> MailDelivery:
        return self.services.mail

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
        roles = roles or Roles.of(None)
        clock = clock or SystemClock()
        persona = load_persona(settings.persona)
        agents = build_agents(settings)
        registry = agents.tools
        loop_config = settings.loop_config()
        metrics = Metrics()  # what /metrics shows (bot/plumbing/metrics.py)
        models = build_models(settings, metrics, llm)  # the main model and its fallbacks
        llm = models.llm
        plane = await build_plane(settings, serving=serving)  # Redis checked before the rest
        closers: list[Callable[[], Awaitable[None]]] = [plane.close, models.close]
        try:
            db = db or await open_database(settings.database_url, migrate=migrate,
                                           settings=settings.database)
        except BaseException:
            for closer in closers:
                await closer()
            raise
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(
            total=settings.gateway.http_timeout_seconds))
        # Capabilities: tool groups shown when needed; credentials encrypted at rest.
        exposure = await build_exposure(registry, agents.capabilities, settings, db)
        users = UserStore(db, holdings=holdings(settings))
        identities = IdentityStore(db, users)
        access = access_with_claims(settings, db, identities, persona.lines)
        history = HistoryStore(db, load_limit=settings.gateway.history_messages)
        pool = AgentPool(db, clock, ttl=timedelta(minutes=settings.agents.pool_ttl_minutes),
                         max_per_user=settings.agents.pool_max_per_user)
        journal = TurnJournal(db, clock)
        resume = Resumer(pool, agents.handler(), llm,
                         lines=persona.lines,
                         answer_check=settings.agents.answer_check, journal=journal)
        stores = AgentStores(db)
        approval_store = ApprovalStore(
            db, timeout=timedelta(minutes=settings.approvals.timeout_minutes),
            lease=timedelta(seconds=settings.approvals.lease_seconds))
        outbound = build_outbound(settings, db, clock, users, identities, {
            PromptKind.APPROVAL: card_outcomes(approval_store, persona.lines),
            PromptKind.PAIRING: pairing_outcomes(access, clock)}, persona.lines,
            # A process that delivers nothing tells the workers what it queued.
            wake_elsewhere=plane.relay.wake_elsewhere() if plane.relay and not roles.worker
            else None)
        credentials = CredentialStore.tolerant(db, os.environ)
        mail = build_mail(db, clock, credentials, outbound, persona.lines)
        approvals = ApprovalFlow(
            approval_store, registry, clock, llm,
            lines=persona.lines,
            confirm_edits=settings.approvals.confirm_edits,
            tool_timeout=loop_config.tool_execution_timeout,
            agent_timeout=loop_config.agent_tool_execution_timeout,
            effects=message_effects(outbound, mail, persona.lines))
        decisions = ApprovalStep(approvals, users, lines=persona.lines,
                                 can_edit=can_edit_cards(outbound.senders))
        transcriber = build_transcriber(settings)  # voice notes, heard when their turn runs
        tasks = build_task_service(db, clock, lines=persona.lines, budget=budget_check(
            db, users, task_budgets(settings), tell_owner(outbound), persona.lines.budget_exceeded),
            signals=plane.signals)
        memory = build_memory(settings, db, clock, llm, lines=persona.lines)
        services = Services(
            users=users, pool=pool, credentials=credentials, stores=stores, tasks=tasks,
            messages_to_others=OutboxMessenger(  # "text Ana that ..."
                db, outbound.outbox, identities, clock, outbound.senders, outbound.wake,
                max_per_day=settings.contacts.max_messages_per_day,
                assistant_name=persona.name),
            mail=mail,
            memory=memory.service if memory else None)
        commands = Commands(access=access, identities=identities, approvals=approvals,
                            tasks=resume, notify_user=outbound.notify_user,
                            lines=persona.lines, assistant_name=persona.name)
        commands.register(Command("/tasks", persona.lines.about_tasks, task_listing(tasks)))
        commands.register(console_command(settings, ConsoleLogins(db), persona))
        for command in memory.commands() if memory else []:
            commands.register(command)
        traces = TraceStore(db)  # what each turn did: /debug, `valet turns`
        # Old messages folded into a running summary (after a memory flush) before the
        # request view would have to drop them.
        summaries = SummaryStore(db)
        compactor = Compactor(history, summaries, llm, clock, loop_config,
                              flush=memory.extractor if memory else None)
        commands.register(debug_command(traces, persona.lines))
        orchestrator = Orchestrator(OrchestratorDeps(
            llm=llm, registry=registry, history=history, users=users, persona=persona,
            clock=clock, loop_config=loop_config,
            limiter=SlidingWindowLimiter(clock, settings.rate_limit_per_minute),
            transcripts=TranscriptWriter(settings.transcripts_dir), http=http,
            tool_services=services, channels=outbound.senders, approvals=approvals,
            tasks=resume, steps=TurnSteps(
                commands=commands, approvals=decisions, tasks=resume,  # the order: turn_steps
                recall=memory.recall if memory else None,
                context=(ContextStep("pending approvals", approvals.context_note),
                         ContextStep("waiting tasks", resume.context_note),
                         ContextStep("plan", stores.plans.context_note),
                         AskTimezoneOnce(users))).in_order(),
            journal=journal,
            exposure=exposure if settings.tool_exposure == "capabilities" else None,
            router=CapabilityRouter(exposure.on) if settings.capability_router else None,
            after_turn=[*([memory.extractor.after_turn] if memory else []),
                        compactor.after_turn], metrics=metrics,
            traces=traces, summaries=summaries, provider=models.provider,
            fallbacks=models.fallbacks, usage=UsageStore(db)))
        if loop_config.subtasks:  # `delegate`: a sub-task with the same loop parts
            registry.add(Subtasks(
                orchestrator.loop_deps, loop_config, assistant=persona.name,
                from_subtask=persona.lines.approval_from_subtask, capabilities=exposure.on,
                available=exposure.available()).tool())
        gateway = Gateway(GatewayDeps(
            db=db, clock=clock, users=users, identities=identities, access=access,
            inbox=InboxStore(db), outbound=outbound, history=history,
            handle_message=orchestrator.handle_message, locks=plane.locks,
            failure_line=persona.lines.llm_unavailable,
            voice_line=persona.lines.voice_unreadable,
            unreadable_line=persona.lines.message_unreadable,
            media=MediaReader(transcriber.transcribe if transcriber else None),
            max_attempts=settings.gateway.turn_attempts,
            retry_seconds=settings.gateway.turn_retry_seconds,
            answer_button=decisions.answer_button, silenced=tasks.silenced,
            mid_turn=settings.gateway.mid_turn, answers_approval=decisions.answers_pending,
            relay=plane.relay, drained=plane.stream.drained if plane.stream else None))
        # Triggered runs ask only for what is on: a capability that is off has no tools there.
        on = exposure.available()
        triggers = build_triggers(
            db, clock, TriggerDoor(gateway, outbound),
            ToolRegistry([t for t in registry if t.name in on]),
            EngineSettings(heartbeat_seconds=settings.triggers.heartbeat_seconds,
                           lease_seconds=settings.triggers.lease_seconds,
                           event_window=timedelta(
                               seconds=settings.triggers.event_window_seconds)),
            service=tasks, http=http, services=services, signals=plane.signals)
        app = cls(settings=settings, db=db, clock=clock, llm=llm, persona=persona,
                  agents=agents, users=users, identities=identities, access=access,
                  history=history, pool=pool, approvals=approvals,
                  sweeper=ApprovalSweeper(approvals),
                  services=services, orchestrator=orchestrator, commands=commands,
                  outbound=outbound,
                  gateway=gateway, triggers=triggers, http=http, memory=memory,
                  compactor=compactor, closers=closers, metrics=metrics,
                  transcriber=transcriber, roles=roles, plane=plane)
        triggers.engine.on_fired = metrics.scheduler_fired
        await app.ensure_owner()
        return app

    def channel_host(self) -> ChannelHost:
        """What a channel may use of Valet (never the App itself)."""
        return ChannelHost(door=self.gateway, identities=self.identities, clock=self.clock,
                           db=self.db, lines=self.persona.lines, commands=self.commands)

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
        await self._tell(await self.sweeper.at_startup(sole_owner=self.db.dialect == "sqlite"))
        await self.gateway.start()
        self._sweeper = asyncio.create_task(self._sweep_approvals())
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
        """One pass of the approval sweeper (expiries, lapsed leases); owners are told without
        waiting for them to write (the conversation hears of it at their next message)."""
        await self._tell(await self.sweeper.sweep())

    async def _tell(self, notices: list[Notice]) -> None:
        for notice in notices:
            user = await self.users.get(notice.user_id)
            if user is None:
                continue
            if notice.line or notice.again:  # with the action offered again, as a card
                await self.outbound.notify(Notification(
                    user.id, notice.line, notice.dedupe_key, urgency=Urgency.URGENT,
                    prompts=tuple(a.prompt(i) for i, a in enumerate(notice.again, 1))))
            await self.outbound.settle_prompts(user.id, corrected=notice.corrected)

    async def _sweep_approvals(self) -> None:
        while True:
            try:
                await self.sweep_approvals()
            except Exception:
                log.exception("approval sweep failed; trying again")
            await asyncio.sleep(self.settings.approvals.sweep_seconds)

    async def close(self) -> None:
        await self.triggers.stop()  # stop firing first
        await self.mail.close()  # an attempt under way may finish; its outcome is told
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
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
