"""The context window an endpoint showed, learnt rather than assumed: a server that refuses a
request for its length says its limit ("maximum context length is 2048 tokens", llama.cpp's
"exceeds the available context size (8192 tokens)"); the model's client keeps it
(`OpenAILLM.context_tokens`), every later request is built within it (bot.loop.context) and
summaries keep the conversation there (bot.memory.compaction). It is remembered per endpoint
and model in the database, so a restart does not pay for it again."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime

from bot.db import Database
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLM

log = logging.getLogger(__name__)


def clients(llms: Iterable[LLM]) -> list[OpenAILLM]:
    """The OpenAI-compatible clients inside the deployment's models (under their meters)."""
    found = []
    for llm in llms:
        inner: object = llm
        while not isinstance(inner, OpenAILLM) and hasattr(inner, "inner"):
            inner = inner.inner
        if isinstance(inner, OpenAILLM):
            found.append(inner)
    return found


class EndpointContexts:
    """The `endpoint_contexts` table: one window per endpoint and model."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def all(self) -> dict[tuple[str, str], int]:
        rows = await self.db.fetch(
            "SELECT endpoint, model, context_tokens FROM endpoint_contexts")
        return {(r["endpoint"], r["model"]): int(r["context_tokens"]) for r in rows}

    async def learn(self, endpoint: str, model: str, tokens: int, at: datetime) -> None:
        await self.db.execute(
            "INSERT INTO endpoint_contexts (endpoint, model, context_tokens, learnt_at)"
            " VALUES ($1, $2, $3, $4) ON CONFLICT (endpoint, model) DO UPDATE SET"
            " context_tokens = excluded.context_tokens, learnt_at = excluded.learnt_at",
            endpoint, model, tokens, at)


async def remember_contexts(store: EndpointContexts, llms: Iterable[LLM]) -> None:
    """Each client starts with the window its endpoint showed before, and keeps what it
    learns from now on."""
    try:
        known = await store.all()
    except Exception as err:  # the windows are learnt again, one refusal each
        log.warning("could not read the context windows learnt before: %s", err)
        known = {}
    for client in clients(llms):
        key = (client.endpoint, client.model)
        if key in known:
            client.context_tokens = known[key]

        async def keep(tokens: int, client: OpenAILLM = client) -> None:
            try:
                await store.learn(client.endpoint, client.model, tokens, datetime.now(UTC))
            except Exception as err:  # the window still holds for this process
                log.warning("could not remember the context window of %s: %s", client.model,
                            err)

        client.on_context_learnt = keep
