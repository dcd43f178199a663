"""The turn as the App builds it: which tools each request carries, waiting tasks, the command
table, the running summary, and the orchestrator with its steps in their order (bot.turn.order);
`delegate` (a sub-task) when the loop allows it."""

from __future__ import annotations

from dataclasses import dataclass

from agents.services import Services
from agents.tools.plan_store import HOLDING as PLAN
from bot.app.approvals import Approvals
from bot.app.base import Base
from bot.app.budget import usage_command
from bot.app.console.command import console_command
from bot.app.memory import Memory
from bot.app.stores import Stores
from bot.app.triggers import task_listing
from bot.approvals.store import HOLDING as APPROVALS
from bot.gateway.budget import BudgetGate
from bot.gateway.outbound import Outbound
from bot.loop.subtasks import Subtasks
from bot.memory.compaction import Compactor
from bot.people.console_login import ConsoleLogins
from bot.people.ratelimit import SlidingWindowLimiter
from bot.tasks.pool import HOLDING as PAUSED_TASKS
from bot.tasks.resume import Resumer
from bot.tools.capabilities import ToolExposure, build_exposure
from bot.tools.capability_router import CapabilityRouter
from bot.turn.commands import Command, Commands
from bot.turn.context_steps import AskTimezoneOnce, ContextStep
from bot.turn.language import OfferLanguage, language_command
from bot.turn.orchestrator import Orchestrator
from bot.turn.orchestrator_deps import AfterTurn, OrchestratorDeps
from bot.turn.order import TurnSteps
from bot.turn.telemetry import TranscriptWriter
from bot.turn.trace_store import debug_command
from triggers.service import TaskService


@dataclass(frozen=True)
class Turn:
    exposure: ToolExposure  # a small core, a capability's tools once it is opened
    resume: Resumer  # the waiting tasks' step
    commands: Commands  # the command table: the turn's first step, channels' menus
    compactor: Compactor  # old messages folded into a running summary
    orchestrator: Orchestrator


async def build_turn(base: Base, stores: Stores, outbound: Outbound, approvals: Approvals,
                     tasks: TaskService, memory: Memory | None, services: Services,
                     budget: BudgetGate) -> Turn:
    settings, lines = base.settings, base.persona.lines
    registry = base.agents.tools
    exposure = await build_exposure(registry, base.agents.capabilities, settings, base.db)
    resume = Resumer(stores.pool, base.agents.handler(), base.llm, lines=lines,
                     answer_check=settings.agents.answer_check, journal=stores.journal)
    commands = build_commands(base, stores, outbound, approvals, resume, tasks, memory)
    commands.register(usage_command(budget, lines))
    commands.register(language_command(stores.users, lines, base.persona.language))
    compactor = Compactor(stores.history, stores.summaries, base.llm, base.clock,
                          base.loop_config, flush=memory.extractor if memory else None)
    orchestrator = Orchestrator(OrchestratorDeps(
        llm=base.llm, registry=registry, history=stores.history, users=stores.users,
        persona=base.persona, clock=base.clock, loop_config=base.loop_config,
        limiter=SlidingWindowLimiter(base.clock, settings.rate_limit_per_minute),
        transcripts=TranscriptWriter(settings.transcripts_dir), http=base.http,
        tool_services=services, channels=outbound.senders, approvals=approvals.flow,
        tasks=resume, steps=TurnSteps(
            commands=commands, approvals=approvals.step, tasks=resume,  # the order: turn.order
            recall=memory.recall if memory else None,
            context=(ContextStep("pending approvals", approvals.flow.context_note,
                                 reads=APPROVALS.name),
                     ContextStep("waiting tasks", resume.context_note, reads=PAUSED_TASKS.name),
                     ContextStep("plan", stores.agents.plans.context_note, reads=PLAN.name),
                     AskTimezoneOnce(stores.users),
                     OfferLanguage(stores.users, lines, base.persona.language))).in_order(),
        journal=stores.journal,
        exposure=exposure if settings.tool_exposure == "capabilities" else None,
        router=CapabilityRouter(exposure.on) if settings.capability_router else None,
        after_turn=[*([AfterTurn(memory.extractor.after_turn, after_small_talk=False)]
                      if memory else []), AfterTurn(compactor.after_turn)],
        metrics=base.metrics,
        traces=stores.traces, summaries=stores.summaries, provider=base.models.provider,
        fallbacks=base.models.fallbacks, usage=stores.usage))
    if base.loop_config.subtasks:  # `delegate`: a sub-task with the same loop parts
        registry.add(Subtasks(
            orchestrator.loop_deps, base.loop_config, assistant=base.persona.name,
            from_subtask=lines.approval_from_subtask, capabilities=exposure.on,
            available=exposure.available()).tool())
    return Turn(exposure=exposure, resume=resume, commands=commands, compactor=compactor,
                orchestrator=orchestrator)


def build_commands(base: Base, stores: Stores, outbound: Outbound, approvals: Approvals,
                   resume: Resumer, tasks: TaskService, memory: Memory | None) -> Commands:
    lines = base.persona.lines
    commands = Commands(access=stores.access, identities=stores.identities,
                        approvals=approvals.flow, tasks=resume,
                        notify_user=outbound.notify_user, lines=lines,
                        assistant_name=base.persona.name,
                        start_on=[c.name for c in base.channels if c.sends_start])
    commands.register(Command("/tasks", lines.about_tasks, task_listing(tasks)))
    commands.register(console_command(base.settings, ConsoleLogins(base.db), base.persona))
    for command in memory.commands() if memory else []:
        commands.register(command)
    commands.register(debug_command(stores.traces, lines))
    return commands
