"""The composition root: the one place that knows every part, builds them in order and
closes them in reverse."""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from bot.clock import Clock, SystemClock
from bot.config import ConfigError, Settings
from bot.db import Database, connect
from bot.llm import LLM, OpenAILLM
from bot.memory import HistoryStore
from bot.orchestrator import Orchestrator, OrchestratorDeps
from bot.ratelimit import SlidingWindowLimiter
from bot.telemetry import TranscriptWriter
from bot.tools import ToolRegistry, tools_in_module
from bot.users import User, UserStore
from persona import Persona, load_persona

log = logging.getLogger(__name__)

BUILTIN_TOOL_MODULES = ("agents.tools.clock", "agents.tools.calculator", "agents.tools.web_fetch")
OWNER_ID = "owner"


def build_llm(settings: Settings) -> LLM:
    llm = settings.llm
    if not llm.configured:
        raise ConfigError(NO_LLM_MESSAGE)
    return OpenAILLM(base_url=llm.base_url, api_key=llm.api_key or "not-needed",
                     model=llm.model or "", timeout=llm.timeout_seconds,
                     extra_body=llm.extra_body)


NO_LLM_MESSAGE = (
    "No LLM configured: set VALET_LLM_MODEL and VALET_LLM_BASE_URL (any OpenAI-compatible "
    "endpoint, e.g. http://localhost:11434/v1 for Ollama) or OPENAI_API_KEY; see README.")


def build_registry(settings: Settings, modules: tuple[str, ...] = BUILTIN_TOOL_MODULES
                   ) -> ToolRegistry:
    registry = ToolRegistry()
    for name in modules:
        module = importlib.import_module(name)
        short = name.rsplit(".", 1)[-1]
        for t in tools_in_module(module):
            # A copy: the decorated function's Tool is shared by every registry in the process.
            registry.add(replace(t, settings=settings.tools.get(short, {})))
    return registry


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
    _closers: list[Any] = field(default_factory=list)

    @classmethod
    async def build(cls, settings: Settings, *, llm: LLM | None = None,
                    clock: Clock | None = None) -> App:
        clock = clock or SystemClock()
        persona = load_persona(settings.persona)
        registry = build_registry(settings)
        loop_config = settings.loop_config()
        llm = llm or build_llm(settings)
        db = await connect(settings.database_url)
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        users = UserStore(db)
        history = HistoryStore(db)
        orchestrator = Orchestrator(OrchestratorDeps(
            llm=llm, registry=registry, history=history, users=users, persona=persona,
            clock=clock, loop_config=loop_config,
            limiter=SlidingWindowLimiter(clock, settings.rate_limit_per_minute),
            transcripts=TranscriptWriter(settings.transcripts_dir), http=http))
        return cls(settings, db, clock, llm, persona, registry, users, history, orchestrator,
                   http)

    async def ensure_owner(self) -> User:
        return await self.users.ensure(
            OWNER_ID, display_name=self.settings.owner.name, timezone=self.settings.timezone,
            is_owner=True, at=self.clock.now())

    async def close(self) -> None:
        await self.http.close()
        await self.llm.close()
        await self.db.close()
