"""The trigger side as the App builds it: the task service (with the limits of what people
may set up) before the turn, the engine last (it puts runs into the gateway's queue)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from agents.services import Services
from bot.app.base import Base
from bot.app.outbound import tell_owner
from bot.app.stores import Stores
from bot.config import Settings
from bot.contracts.envelopes import Delivery, Notification, TriggerMessage
from bot.contracts.turn import TurnContext
from bot.gateway.gateway import Gateway
from bot.gateway.outbound import Outbound
from bot.tools.capabilities import ToolExposure
from bot.tools.registry import ToolRegistry
from triggers.engine import EngineSettings
from triggers.service import TaskService
from triggers.task_limits import TaskLimit, TaskLimits
from triggers.wiring import Triggers, build_task_service, build_triggers, task_limit_check


@dataclass(frozen=True)
class TriggerDoor:
    """What a triggered run needs of the message path: the person's queue (the gateway's
    entry by user) and notifications (the outbound side)."""

    gateway: Gateway
    outbound: Outbound

    async def submit(self, msg: TriggerMessage) -> bool:
        return await self.gateway.submit(msg)

    async def notify(self, note: Notification) -> Delivery:
        return await self.outbound.notify(note)


def task_limits(settings: Settings) -> TaskLimits:
    t = settings.triggers
    return TaskLimits(
        others=TaskLimit(t.max_active_tasks, timedelta(minutes=t.min_llm_interval_minutes)),
        owner=TaskLimit(t.owner_max_active_tasks,
                     timedelta(minutes=t.owner_min_llm_interval_minutes)))


def build_tasks(base: Base, stores: Stores, outbound: Outbound) -> TaskService:
    lines = base.persona.lines
    return build_task_service(base.db, base.clock, lines=lines, limits=task_limit_check(
        base.db, stores.users, task_limits(base.settings), tell_owner(outbound),
        lines), signals=base.plane.signals)


def build_engine(base: Base, gateway: Gateway, outbound: Outbound, tasks: TaskService,
                 services: Services, exposure: ToolExposure) -> Triggers:
    """Triggered runs ask only for what is on: a capability that is off has no tools there."""
    on = exposure.available()
    t = base.settings.triggers
    triggers = build_triggers(
        base.db, base.clock, TriggerDoor(gateway, outbound),
        ToolRegistry([tool for tool in base.agents.tools if tool.name in on]),
        EngineSettings(heartbeat_seconds=t.heartbeat_seconds, lease_seconds=t.lease_seconds,
                       event_window=timedelta(seconds=t.event_window_seconds)),
        service=tasks, http=base.http, services=services, signals=base.plane.signals)
    triggers.engine.on_fired = base.metrics.scheduler_fired
    return triggers


def task_listing(tasks: TaskService) -> Callable[[TurnContext, list[str]], Awaitable[str]]:
    async def listing(ctx: TurnContext, args: list[str]) -> str:
        return await tasks.listing(ctx.user.id)

    return listing
