"""What every part of the App is built from: the settings, the clock, the persona, the
registry, the models, the work plane, the database and the shared HTTP client. Opened first
(Redis and the database checked before anything else is built) and closed last."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import aiohttp

from agents.registry import Registry, load_registry
from bot.app.database import open_database
from bot.app.models import Models, build_models, priced
from bot.app.plane import Plane, build_plane
from bot.app.roles import Roles
from bot.budget import Spending
from bot.config import Settings
from bot.config.policies import ReactLoopConfig
from bot.config.registries import registry_paths
from bot.contracts.channels import ChannelTraits
from bot.contracts.clock import Clock
from bot.db import Database
from bot.llm.context_limit import EndpointContexts, remember_contexts
from bot.llm.port import LLM
from bot.plumbing.metrics import Metrics
from channels.registry import specs
from persona import Persona, load_persona


class Ground(Protocol):
    """What every process role builds its parts on (bot.app.root.App's `Base`, and the web
    role's front, bot.app.front): the stores, the outbound side and the gateway are built
    from these by the same functions in every role."""

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def persona(self) -> Persona: ...

    @property
    def plane(self) -> Plane: ...

    @property
    def db(self) -> Database: ...

    @property
    def roles(self) -> Roles: ...

    @property
    def spending(self) -> Spending: ...


def build_agents(settings: Settings) -> Registry:
    """The registry files (agents/registry.yaml, then the deployment's), checked."""
    paths = registry_paths(settings.agents.registries, settings.config_dir())
    return load_registry(paths, settings.tools)


@dataclass
class Base:
    settings: Settings
    clock: Clock
    persona: Persona
    agents: Registry
    loop_config: ReactLoopConfig
    metrics: Metrics  # what /metrics shows (bot/plumbing/metrics.py): this App's own
    models: Models  # the main model and its fallbacks
    plane: Plane  # how work and signals reach other processes
    db: Database
    http: aiohttp.ClientSession
    roles: Roles
    spending: Spending  # what each person costs a day (bot.budget)
    # Every channel Valet has (channels.registry), as the core is told of them.
    channels: tuple[ChannelTraits, ...] = ()
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def llm(self) -> LLM:
        return self.models.llm


async def open_base(settings: Settings, *, clock: Clock, llm: LLM | None,
                    migrate: bool | Literal["check"], db: Database | None, roles: Roles,
                    serving: bool) -> Base:
    channels = specs(settings)
    persona = load_persona(settings.persona, channels=channels.names(),
                           line_groups=channels.line_groups())
    agents = build_agents(settings)
    metrics = Metrics()
    models = build_models(settings, metrics, llm)
    plane = await build_plane(settings, serving=serving)  # Redis checked before the rest
    closers: list[Callable[[], Awaitable[None]]] = [plane.close, models.close]
    try:
        db = db or await open_database(settings.database_url, migrate=migrate,
                                       settings=settings.database, wait=serving)
    except BaseException:
        for closer in closers:
            await closer()
        raise
    spending = Spending(db)
    # the context windows the endpoints showed before (bot.llm.context_limit)
    await remember_contexts(EndpointContexts(db), [models.llm, *(s.llm for s in
                                                                 models.fallbacks)])
    models = priced(models, settings, spending, clock)  # the models' calls added to it
    http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(
        total=settings.gateway.http_timeout_seconds))
    return Base(settings=settings, clock=clock, persona=persona, agents=agents,
                loop_config=settings.loop_config(), metrics=metrics, models=models,
                plane=plane, db=db, http=http, roles=roles, spending=spending,
                channels=channels.traits(), closers=closers)
