"""Long-term memory put together for the composition root: the recall step, the extractor
(the orchestrator's after-turn hook), the service the tools reach, the `/memory` and
`/forget` commands, and the periodic pass that retries failed extractions."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from bot.app.models import output_caps
from bot.config import Settings
from bot.contracts.clock import Clock
from bot.contracts.turn import TurnContext
from bot.db import Database
from bot.llm.openai_client import OpenAILLM
from bot.llm.person_first import PersonFirst, PersonFirstLLM
from bot.llm.port import LLM
from bot.memory.extract import MemoryExtractor
from bot.memory.facts import FactStore
from bot.memory.queue import ExtractionQueue
from bot.memory.recall import MemoryRecall, Recaller
from bot.memory.service import MemoryService
from bot.memory.vectors import Embedder, EmbeddingsUnavailable, VectorIndex
from bot.plumbing.background import cancel_and_wait
from bot.turn.commands import Command
from persona.lines_people import MemoryLines

log = logging.getLogger(__name__)

PASS_SECONDS = 60.0  # how often queued extractions and missing embeddings are looked at


@dataclass
class Memory:
    service: MemoryService
    recall: MemoryRecall
    extractor: MemoryExtractor
    _closers: list[LLM | Embedder] = field(default_factory=list)
    _pass: asyncio.Task[None] | None = None

    def commands(self) -> list[Command]:
        lines = self.service.lines
        return [Command("/memory", lines.about_memory, self._list),
                Command("/forget", lines.about_forget, self._forget)]

    async def _list(self, ctx: TurnContext, args: list[str]) -> str:
        return await self.service.listing(ctx.user.id, " ".join(args))

    async def _forget(self, ctx: TurnContext, args: list[str]) -> str:
        if not args:
            return self.service.lines.memory_forget_usage
        ids = [int(a.lstrip("#")) for a in args if a.lstrip("#").isdigit()]
        words = " ".join(a for a in args if not a.lstrip("#").isdigit())
        return self.service.forgotten_line(await self.service.forget(ctx.user.id, words, ids))

    async def one_pass(self) -> None:
        """Retry queued extractions that are due; embed facts stored without a vector."""
        await self.extractor.retry_due()
        with contextlib.suppress(EmbeddingsUnavailable):
            await self.service.embed_missing()

    def start(self) -> None:
        self._pass = asyncio.create_task(self._passes())

    async def _passes(self) -> None:
        while True:
            await asyncio.sleep(PASS_SECONDS)
            try:
                await self.one_pass()
            except Exception:
                log.exception("memory pass failed; trying again")

    async def close(self) -> None:
        if self._pass is not None:
            await cancel_and_wait(self._pass)
        await self.extractor.close()
        for closer in self._closers:
            await closer.close()


def build_memory(settings: Settings, db: Database, clock: Clock, llm: LLM, *,
                 lines: MemoryLines, gate: PersonFirst | None = None) -> Memory | None:
    """None when memory is turned off (memory.enabled: false). `lines`: the persona's."""
    cfg = settings.memory
    if not cfg.enabled:
        return None
    closers: list[LLM | Embedder] = []
    api_key = settings.llm.api_key_value() or "not-needed"
    embedder, index = None, None
    store = FactStore(db, clock)
    if cfg.embedding_model:
        embedder = Embedder(base_url=settings.llm.base_url, api_key=api_key,
                            model=cfg.embedding_model, clock=clock,
                            timeout=min(settings.llm.timeout_seconds, 5.0))
        index = VectorIndex(store, cfg.embedding_model)
        closers.append(embedder)
    extraction_llm = llm
    if cfg.extraction_model and cfg.extraction_model != llm.model:
        extraction_llm = OpenAILLM(base_url=settings.llm.base_url, api_key=api_key,
                                   model=cfg.extraction_model,
                                   timeout=settings.llm.timeout_seconds,
                                   extra_body=settings.llm.extra_body,
                                   caps=output_caps(settings),
                                   cap_field=settings.llm.max_tokens_field)
        closers.append(extraction_llm)
        if gate is not None:  # its requests after the turns, like the main model's
            extraction_llm = PersonFirstLLM(extraction_llm, gate)
    recaller = Recaller(store, embedder, index)
    service = MemoryService(store, recaller, lines, embedder)
    return Memory(service, MemoryRecall(recaller, cfg.recall_budget_tokens),
                  MemoryExtractor(service, ExtractionQueue(db), extraction_llm, clock),
                  closers)
