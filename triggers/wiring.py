"""Builds the trigger side for the composition root (bot/app calls these two).

The task service comes first (tools need it before the turn's parts exist); the engine comes
last (it puts runs into the gateway's queue) and hears the service's changes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp

from bot.contracts.clock import Clock
from bot.db import Database
from bot.people.users import UserStore
from bot.tools.registry import ToolRegistry
from bot.work.control import RedisSignals, Signals
from persona.lines import ScheduleLines
from triggers.changes import TaskChanges
from triggers.conditions import registry_checker
from triggers.engine import EngineSettings, TriggerEngine
from triggers.event_store import StoredEventBus
from triggers.executors import TriggerGateway, default_executors
from triggers.service import TaskService
from triggers.store import TaskStore
from triggers.task_limits import TaskLimitCheck, TaskLimits, TellOwner

if TYPE_CHECKING:
    from aiohttp import web

EVENTS_TOKEN_ENV = "VALET_EVENTS_TOKEN"


@dataclass
class Triggers:
    engine: TriggerEngine
    service: TaskService
    bus: StoredEventBus  # events stored before they are acknowledged

    async def start(self, *, wake_up: bool = True) -> None:
        await self.bus.start()
        await self.engine.start(wake_up=wake_up)

    async def stop(self) -> None:
        await self.engine.stop()
        await self.bus.stop()

    def http_app(self, env: dict[str, str] | None = None) -> web.Application:
        """The `POST /events` sub-application for `valet serve`."""
        from triggers.http import events_app  # aiohttp's server: only a process that serves

        token = (env if env is not None else os.environ).get(EVENTS_TOKEN_ENV)
        return events_app(self.bus, token)


def answer_run_now(engine: TriggerEngine, signals: RedisSignals) -> None:
    """`valet tasks run-now` from any machine: the leading scheduler runs the task and says
    what became of the run."""

    async def run_now(fields: dict[str, str]) -> None:
        if not engine.leading or "reply" not in fields:
            return
        outcome = await engine.run_now(fields.get("task", ""))
        await signals.answer(fields["reply"], outcome=outcome.value if outcome else "")

    signals.listen("run_now", run_now)


def build_task_service(db: Database, clock: Clock, *, lines: ScheduleLines,
                       limits: TaskLimitCheck | None = None, signals: Signals | None = None
                       ) -> TaskService:
    """`lines`: the persona's (a task listing, a reminder, a task whose approval expired).
    `signals`: shared with other processes (Redis), a change reaches their engines too."""
    return TaskService(TaskStore(db), clock, TaskChanges(signals), lines=lines, limits=limits)


def task_limit_check(db: Database, users: UserStore, limits: TaskLimits,
                     tell_owner: TellOwner | None, lines: ScheduleLines) -> TaskLimitCheck:
    return TaskLimitCheck(limits, users, TaskStore(db), tell_owner, lines)


def build_triggers(db: Database, clock: Clock, gateway: TriggerGateway, registry: ToolRegistry,
                   settings: EngineSettings, *, service: TaskService,
                   http: aiohttp.ClientSession | None = None, services: object = None,
                   signals: Signals | None = None) -> Triggers:
    """`services`: what a condition's check (a read-only tool) may use, as in a turn. The
    engine says what the task service's lines say."""
    bus = StoredEventBus(db, clock, signals=signals)
    engine = TriggerEngine(db, clock, gateway,
                           default_executors(gateway, registry.names(), lines=service.lines,
                                             language_of=UserStore(db).language_of),
                           bus=bus, checker=registry_checker(registry, clock, http=http,
                                                             services=services),
                           settings=settings, changes=service.changes, lines=service.lines)
    return Triggers(engine, service, bus)
