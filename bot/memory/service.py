"""What the rest of Valet asks of memory: learn a fact, list, forget. Tools, commands, the
extractor and the owner's CLI all go through here, so a fact is stored (and embedded) one
way."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from bot.memory.facts import Closed, Fact, FactStore, Kind, search_terms
from bot.memory.recall import LEARNT_NOTE, Recaller
from bot.memory.vectors import Embedder, EmbeddingsUnavailable, to_bytes
from bot.text.untrusted import quote_untrusted
from persona.lines import fill
from persona.lines_people import MemoryLines

log = logging.getLogger(__name__)

LISTED = 50  # facts shown by /memory and the listing tool; the count says if there are more


@dataclass(frozen=True)
class MemoryService:
    store: FactStore
    recaller: Recaller
    lines: MemoryLines  # what /memory, /forget and the memory tools say
    embedder: Embedder | None = None

    async def learn(self, user_id: str, text: str, kind: Kind = Kind.FACT, *,
                    source_turn: str | None = None, replaces: Iterable[int] = (),
                    from_third_party: bool = False) -> Fact | None:
        """Store a fact (embedded when an embedding model is set and answers; a fact left
        without a vector is embedded later). None when it repeats an open fact."""
        vector, model = None, None
        if self.embedder is not None:
            try:
                [embedded] = await self.embedder.embed([text])
                vector, model = to_bytes(embedded), self.embedder.model
            except EmbeddingsUnavailable as err:
                log.warning("fact stored without its embedding for now: %s", err)
        return await self.store.add(user_id, text, kind, source_turn=source_turn,
                                    replaces=replaces, embedding=vector,
                                    embedding_model=model, from_third_party=from_third_party)

    async def listing(self, user_id: str, about: str = "") -> str:
        """What Valet remembers (about something, or everything), numbered by fact id."""
        facts = await self.recaller.relevant(user_id, about, with_recent=False) if about \
            else await self.store.open_facts(user_id, LISTED + 1)
        if not facts:
            return self.lines.memory_nothing_about if about else self.lines.memory_nothing
        shown = facts[:LISTED]
        listed = "\n".join(f"#{f.id} {f.text} ({f.kind.value})" for f in shown
                           if not f.from_third_party)
        learnt = [f for f in shown if f.from_third_party]
        if learnt:  # words someone else wrote, kept: data for the model, never instructions
            listed = "\n".join(filter(None, [listed, quote_untrusted("\n".join(
                f"#{f.id} {f.text} ({f.kind.value})" for f in learnt), note=LEARNT_NOTE)]))
        return fill(self.lines.memory_listing_more if len(facts) > LISTED
                    else self.lines.memory_listing, facts=listed)

    def forgotten_line(self, facts: list[Fact]) -> str:
        if not facts:
            return self.lines.memory_forget_nothing
        return fill(self.lines.memory_forgotten, facts="\n".join(f"- {f.text}" for f in facts))

    async def matching(self, user_id: str, about: str = "", ids: Iterable[int] = ()
                       ) -> list[Fact]:
        """The person's open facts with these ids, or holding every word of `about` (what
        `forget` would close), oldest first."""
        wanted = {int(i) for i in ids}
        if about and search_terms(about):
            wanted |= {f.id for f in await self.store.search(user_id, about, 50, every=True)}
        if not wanted:
            return []
        return sorted((f for f in await self.store.open_facts(user_id) if f.id in wanted),
                      key=lambda f: f.id)

    async def forget(self, user_id: str, about: str = "", ids: Iterable[int] = ()
                     ) -> list[Fact]:
        """Close the person's facts with these ids, or those holding every word of `about`."""
        wanted = list(ids)
        if about and search_terms(about):
            wanted += [f.id for f in await self.store.search(user_id, about, 50, every=True)]
        return await self.store.close(user_id, wanted, Closed.FORGOTTEN)

    async def forget_everything(self, user_id: str) -> int:
        return await self.store.forget_all(user_id)

    async def embed_missing(self, batch: int = 64) -> int:
        """Embed open facts stored without a vector (the endpoint was down); returns how
        many were embedded."""
        if self.embedder is None:
            return 0
        facts = await self.store.unembedded(self.embedder.model, batch)
        if not facts:
            return 0
        vectors = await self.embedder.embed([f.text for f in facts])
        for fact, vector in zip(facts, vectors, strict=True):
            await self.store.set_embedding(fact.user_id, fact.id, to_bytes(vector),
                                           self.embedder.model)
        return len(facts)

