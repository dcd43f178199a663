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
from typing import Any, Literal

import aiohttp

from agents.email.delivery import DeliveryPolicy, MailDelivery, stored_accounts
from agents.email.outbox import MailOutbox
from agents.registry import Registry, load_registry
from agents.stores import AgentStores
from bot.approvals.decide import ApprovalStep
from bot.approvals.flow import ApprovalFlow, ApprovalLines
from bot.approvals.store import ApprovalStore
from bot.approvals.sweeper import ApprovalSweeper, Notice
from bot.capabilities import build_exposure
from bot.channel import PermanentSendError
from bot.clock import Clock, SystemClock
from bot.commands import Command, Commands
from bot.config import ConfigError, Settings
from bot.config.registries import registry_paths
from bot.credentials import CredentialStore
from bot.db import Database, connect
from bot.db.sqlite_owner import SQLiteOwner, claim
from bot.envelopes import Delivery, Notification, OutboundMessage
from bot.gateway.access import AccessControl
from bot.gateway.gateway import Gateway, GatewayDeps
from bot.gateway.identity import IdentityStore
from bot.gateway.inbox import InboxStore
from bot.gateway.locks import LocalUserLocks, RedisUserLocks, UserLocks
from bot.gateway.notify import Notifier, ReachStore
from bot.gateway.others import OutboxMessenger
from bot.gateway.outbox import ChannelSender, OnPermanent, OutboxDeliverer, OutboxStore
from bot.gateway.prompt_edits import PromptEdits
from bot.gateway.ratelimit import SlidingWindowLimiter
from bot.gateway.users import User, UserStore
from bot.journal import TurnJournal
from bot.llm import LLM
from bot.memory.history import HistoryStore
from bot.memory.wiring import Memory, build_memory
from bot.metered_llm import MeteredLLM
from bot.metrics import Metrics
from bot.offload import shutdown as stop_offload_workers
from bot.openai_llm import OpenAILLM
from bot.orchestrator import Orchestrator, OrchestratorDeps
from bot.stall import StallMonitor
from bot.steps import AskTimezoneOnce, ContextStep
from bot.tasks.pool import AgentPool
from bot.tasks.resume import Resumer, TaskLines
from bot.telemetry import TranscriptWriter
from bot.tools import ToolRegistry
from bot.turn import TurnContext
from persona import Persona, load_persona

log = logging.getLogger(__name__)

OWNER_ID = "owner"
CONSOLE_ADDRESS = "local"


def build_llm(settings: Settings) -> LLM:
    llm = settings.llm
    if not llm.configured:
        raise ConfigError(NO_LLM_MESSAGE)
    return OpenAILLM(base_url=llm.base_url, api_key=llm.api_key_value() or "not-needed",
                     model=llm.model or "", timeout=llm.timeout_seconds,
                     extra_body=llm.extra_body)


NO_LLM_MESSAGE = (
    "No LLM configured: set VALET_LLM_MODEL and VALET_LLM_BASE_URL (any OpenAI-compatible "
    "endpoint, e.g. http://localhost:11434/v1 for Ollama) or OPENAI_API_KEY; see README.")


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
    registry: ToolRegistry
    users: UserStore
    history: HistoryStore
    orchestrator: Orchestrator
    http: aiohttp.ClientSession
    identities: IdentityStore
    access: AccessControl
    gateway: Gateway
    senders: dict[str, ChannelSender]
    _closers: list[Any] = field(default_factory=list)
    agents: Registry = field(default_factory=Registry)
    pool: AgentPool | None = None
    # Always built by App.build; keyword-only so they may follow the fields with defaults.
    approvals: ApprovalFlow = field(kw_only=True)
    sweeper: ApprovalSweeper = field(kw_only=True)
    _sweeper: asyncio.Task[None] | None = None
    _owner: SQLiteOwner | None = None
    stall_monitor: StallMonitor | None = None
    triggers: Any = None  # triggers.wiring.Triggers (bot never imports triggers at the top)
    memory: Memory | None = None  # long-term memory (issue 15); None when turned off
    mail: MailDelivery | None = None  # approved mail's outbox and its deliverer (issue 17)
    metrics: Metrics = field(default_factory=Metrics)  # /metrics: this App's own registry

    @classmethod
    async def build(cls, settings: Settings, *, llm: LLM | None = None,
                    clock: Clock | None = None, migrate: bool | Literal["check"] = True
                    ) -> App:
        """`migrate`: apply pending migrations (True) or refuse an old schema ("check");
        see bot.app.roles.migrates_on_start."""
        clock = clock or SystemClock()
        persona = load_persona(settings.persona)
        agents = build_agents(settings)
        registry = agents.tools
        loop_config = settings.loop_config()
        metrics = Metrics()  # issue 26: what /metrics shows (bot/metrics.py)
        llm = MeteredLLM(llm or build_llm(settings), metrics)
        locks, closers = await _user_locks(settings)  # Redis checked before anything opens
        try:
            db = await connect(settings.database_url, migrate=migrate)
        except BaseException:
            for closer in closers:
                await closer()
            raise
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(
            total=settings.gateway.http_timeout_seconds))
        # --- capabilities (issue 16): tool groups shown when needed; credentials encrypted
        exposure = await build_exposure(registry, agents.capabilities, settings, db)
        users = UserStore(db)
        history = HistoryStore(db, load_limit=settings.gateway.history_messages)
        pool = AgentPool(db, clock, ttl=timedelta(minutes=settings.agents.pool_ttl_minutes),
                         max_per_user=settings.agents.pool_max_per_user)
        journal = TurnJournal(db, clock)
        resume = Resumer(pool, agents.handler(), llm,
                         lines=TaskLines.from_persona(persona.lines),
                         answer_check=settings.agents.answer_check, journal=journal)
        stores = AgentStores(db)
        approval_store = ApprovalStore(
            db, timeout=timedelta(minutes=settings.approvals.timeout_minutes),
            lease=timedelta(seconds=settings.approvals.lease_seconds))
        approvals = ApprovalFlow(
            approval_store, registry, clock, llm,
            lines=ApprovalLines(persona.lines.approval_intro, persona.lines.approval_expired),
            confirm_edits=settings.approvals.confirm_edits,
            tool_timeout=loop_config.tool_execution_timeout,
            agent_timeout=loop_config.agent_tool_execution_timeout)
        decisions = ApprovalStep(approvals, users)
        identities = IdentityStore(db, users)
        access = AccessControl(db, identities, settings.access, settings.timezone)
        gateway_box: list[Gateway] = []  # the gateway is built after the orchestrator
        triggers_box: list[Any] = []  # and the trigger engine after the gateway

        async def notify_user(user: User, text: str, **kwargs: Any) -> bool:
            return await gateway_box[0].notify_user(user, text, **kwargs)

        commands = Commands(access=access, identities=identities, approvals=approvals,
                            tasks=resume, notify_user=notify_user,
                            assistant_name=persona.name)
        services: dict[str, Any] = {"pool": pool, "users": users,
                                    "credentials": CredentialStore.tolerant(db, os.environ)}
        mail = _build_mail(db, clock, services["credentials"], gateway_box)  # issue 17
        services["mail"] = mail
        memory = build_memory(settings, db, clock, llm)  # issue 15
        if memory is not None:
            services["memory"] = memory.service
        orchestrator = Orchestrator(OrchestratorDeps(
            llm=llm, registry=registry, history=history, users=users, persona=persona,
            clock=clock, loop_config=loop_config,
            limiter=SlidingWindowLimiter(clock, settings.rate_limit_per_minute),
            transcripts=TranscriptWriter(settings.transcripts_dir), http=http,
            tool_stores=stores, tool_services=services,
            approvals=approvals, tasks=resume, steps=[
                commands,  # slash commands answer at once, without the LLM;
                decisions,  # pending approvals get the message first,
                resume,  # then tasks waiting for an answer;
                *([memory.recall] if memory else []),  # what Valet remembers of the person
                ContextStep("pending approvals", approvals.context_note),  # what still waits
                ContextStep("waiting tasks", resume.context_note),
                ContextStep("plan", stores.plans.context_note),
                AskTimezoneOnce(users)],
            journal=journal,
            exposure=exposure if settings.tool_exposure == "capabilities" else None,
            after_turn=[memory.extractor.after_turn] if memory else [], metrics=metrics))
        gateway = _build_gateway(
            settings, db, clock, persona, users=users, identities=identities, access=access,
            history=history, handle_message=orchestrator.handle_message, locks=locks,
            answer_button=decisions.answer_button, silenced=_silenced(triggers_box),
            outcomes=approval_store.outcomes)
        senders = gateway.deps.senders
        gateway_box.append(gateway)
        services["messages_to_others"] = OutboxMessenger(  # issue 17: "text Ana that ..."
            db, gateway.deps.outbox, identities, clock, senders, gateway.deps.deliverer.wake,
            max_per_day=settings.contacts.max_messages_per_day, assistant_name=persona.name)
        app = cls(settings, db, clock, llm, persona, registry, users, history, orchestrator,
                  http, identities, access, gateway, senders, closers, agents=agents, pool=pool,
                  approvals=approvals, sweeper=ApprovalSweeper(
                      approval_store, clock,
                      expired_template=persona.lines.approval_expired))
        # --- triggers (issue 14): the engine, its task service (tools reach it as a service)
        # (triggered runs ask only for what is on: a capability that is off has no tools there)
        on = exposure.available()
        available = ToolRegistry([t for t in registry if t.name in on])
        app.triggers = _build_triggers(settings, db, clock, gateway, available, http, stores)
        services["triggers"] = app.triggers.service
        triggers_box.append(app.triggers)
        commands.register(Command("/tasks", "your reminders and scheduled tasks",
                                  _task_listing(app.triggers)))
        app.memory = memory
        app.mail = mail
        app.metrics = metrics
        app.triggers.engine.on_fired = metrics.scheduler_fired
        for command in memory.commands() if memory else []:
            commands.register(command)
        await app.ensure_owner()
        return app

    def add_channel(self, sender: ChannelSender) -> None:
        """Register a channel's sender: the outbox delivers its messages through it."""
        self.senders[sender.name] = sender

    async def ensure_owner(self) -> User:
        """The owner from configuration, reachable on the console and their listed ids."""
        now = self.clock.now()
        owner = await self.users.ensure(
            OWNER_ID, display_name=self.settings.owner.name, timezone=self.settings.timezone,
            is_owner=True, at=now)
        addresses = [("console", CONSOLE_ADDRESS)]
        addresses += [("telegram", i) for i in self.settings.owner.telegram_ids]
        addresses += [("sms", n) for n in self.settings.owner.phone_numbers]
        for channel, address in addresses:
            if await self.identities.resolve(channel, address) is None:
                await self.identities.link(channel, address, owner.id, at=now)
        return owner

    async def start(self) -> None:
        """Start running turns. On SQLite this process must be the file's only one (raises
        DatabaseInUse, a ConfigError, otherwise); approvals a dead process left approved or
        executing are settled as interrupted, and their owners told, before any turn runs."""
        self._owner = claim(self.settings.database_url)
        await self._tell(await self.sweeper.at_startup(sole_owner=self.db.dialect == "sqlite"))
        self.stall_monitor = StallMonitor(self.settings.stall_warning_ms / 1000)
        self.stall_monitor.start()
        await self.gateway.start()
        self._sweeper = asyncio.create_task(self._sweep_approvals())
        if self.triggers is not None and self.settings.triggers.enabled:  # issue 14
            await self.triggers.start()
        if self.memory is not None:  # issue 15: retries of failed extractions
            self.memory.start()
        if self.mail is not None:  # issue 17: queued mail goes out; outcomes told
            self.mail.start(sole_owner=self.db.dialect == "sqlite")

    async def sweep_approvals(self) -> None:
        """One pass of the approval sweeper (expiries, lapsed leases); owners are told without
        waiting for them to write (the conversation hears of it at their next message)."""
        await self._tell(await self.sweeper.sweep())

    async def _tell(self, notices: list[Notice]) -> None:
        for notice in notices:
            user = await self.users.get(notice.user_id)
            if user is not None:
                await self.gateway.notify_user(user, notice.line, dedupe_key=notice.dedupe_key)
                await self.gateway.settle_prompts(user.id)

    async def _sweep_approvals(self) -> None:
        while True:
            try:
                await self.sweep_approvals()
            except Exception:
                log.exception("approval sweep failed; trying again")
            await asyncio.sleep(self.settings.approvals.sweep_seconds)

    async def close(self) -> None:
        if self.triggers is not None:  # issue 14: stop firing first
            await self.triggers.stop()
        if self.mail is not None:  # an attempt under way may finish; its outcome is told
            await self.mail.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.gateway.stop()
        if self.memory is not None:
            await self.memory.close()
        if self.stall_monitor is not None:
            await self.stall_monitor.stop()
        stop_offload_workers()
        for closer in self._closers:
            await closer()
        await self.http.close()
        await self.llm.close()
        await self.db.close()
        if self._owner is not None:
            self._owner.release()


def _build_gateway(settings: Settings, db: Database, clock: Clock, persona: Persona, *,
                   users: UserStore, identities: IdentityStore, access: AccessControl,
                   history: HistoryStore, handle_message: Any, locks: UserLocks,
                   answer_button: Any, silenced: Callable[[str], Awaitable[bool]],
                   outcomes: Any) -> Gateway:
    """The message path: inbox and access in, outbox out, notifications, prompt edits. Channels
    register their senders later (App.add_channel) in the map it delivers through."""
    senders: dict[str, ChannelSender] = {}
    outbox = OutboxStore(db)
    reach = ReachStore(db)
    return Gateway(GatewayDeps(
        db=db, clock=clock, users=users, identities=identities, access=access,
        inbox=InboxStore(db), outbox=outbox,
        deliverer=OutboxDeliverer(outbox, senders, clock, settings.delivery_policy(),
                                  on_permanent=_mark_unwritable(identities, clock)),
        history=history, handle_message=handle_message, locks=locks,
        senders=senders, failure_line=persona.lines.llm_unavailable,
        max_attempts=settings.gateway.turn_attempts,
        retry_seconds=settings.gateway.turn_retry_seconds,
        notifier=Notifier(db, users, reach, outbox, clock, senders), reach=reach,
        answer_button=answer_button, silenced=silenced,
        prompt_edits=PromptEdits(db, outbox, clock, outcomes, can_edit=_can_edit(senders))))


def _build_mail(db: Database, clock: Clock, credentials: CredentialStore,
                gateway_box: list[Gateway]) -> MailDelivery:
    """Issue 17: approved mail is stored (keyed by its approval id) and sent once; the
    deliverer retries what the server did not take and tells the person the outcome."""
    policy = DeliveryPolicy()

    async def notify(note: Notification) -> Delivery:
        return await gateway_box[0].notify(note)

    return MailDelivery(MailOutbox(db, lease=policy.lease), clock, stored_accounts(credentials),
                        policy=policy, notify=notify)


def _can_edit(senders: dict[str, ChannelSender]) -> Callable[[str], bool]:
    def can_edit(channel: str) -> bool:
        features = getattr(senders.get(channel), "features", None)
        return bool(features is not None and features.edit)

    return can_edit


def _silenced(triggers_box: list[Any]) -> Callable[[str], Awaitable[bool]]:
    async def silenced(run_key: str) -> bool:
        return bool(triggers_box) and await triggers_box[0].service.silenced(run_key)

    return silenced


def _task_listing(triggers: Any) -> Callable[[TurnContext, list[str]], Awaitable[str]]:
    async def listing(ctx: TurnContext, args: list[str]) -> str:
        return str(await triggers.service.listing(ctx.user.id))

    return listing


def _build_triggers(settings: Settings, db: Database, clock: Clock, gateway: Gateway,
                    registry: ToolRegistry, http: aiohttp.ClientSession, stores: Any) -> Any:
    """Issue 14: the trigger engine (the composition root is the one place bot meets it)."""
    from triggers.engine import EngineSettings
    from triggers.wiring import build_triggers

    return build_triggers(db, clock, gateway, registry, EngineSettings(
        heartbeat_seconds=settings.triggers.heartbeat_seconds,
        lease_seconds=settings.triggers.lease_seconds), http=http, stores=stores)


def _mark_unwritable(identities: IdentityStore, clock: Clock) -> OnPermanent:
    async def mark(message: OutboundMessage, err: PermanentSendError) -> None:
        if err.opted_out:
            await identities.set_opted_out(message.channel, message.address, True,
                                           at=clock.now())
        else:
            await identities.set_unreachable(message.channel, message.address, True,
                                             at=clock.now())
        log.warning("%s %s can no longer be written to: %s", message.channel,
                    message.address, err)

    return mark


async def _user_locks(settings: Settings) -> tuple[UserLocks, list[Any]]:
    if not settings.redis_url:
        return LocalUserLocks(), []
    from bot.redis_service import open_redis

    client = await open_redis(settings.redis_url)  # RedisUnavailable: one line at start-up
    return RedisUserLocks(client, ttl_seconds=settings.gateway.user_lock_ttl_seconds), \
        [client.aclose]
