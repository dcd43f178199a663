"""Long-term memory: the facts Valet knows about each person, on the Database port.

Facts are keyed by user id (linked identities share one person's memory; nothing crosses
people: every query names the user). A replaced or forgotten fact is closed (`valid_to`
set, with the reason), never deleted. Keyword search runs on FTS5 (SQLite; its rows hold
the open facts only, written together with the fact) or on Postgres full-text search (a GIN
index over the open facts). Every change bumps the person's version, which a cached vector
index (bot.memory.vectors) checks before it trusts itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from bot.contracts.clock import Clock
from bot.db import Database, Queries, Row
from bot.db.turn_reads import Holding, may_hold, now_holds

MAX_FACT_CHARS = 300
_WORD = re.compile(r"\w+", re.UNICODE)
# Words that say nothing about which fact is meant ("what do I like?" is about "like").
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself
yourselves tell know remember please thanks thank hi hello hey ok okay yes yeah
""".split())
MAX_QUERY_TERMS = 16


class Kind(Enum):
    FACT = "fact"
    PREFERENCE = "preference"
    PERSON = "person"
    EVENT = "event"

    @classmethod
    def parse(cls, value: str | None) -> Kind:
        """A kind from what an LLM wrote; anything unknown is a plain fact."""
        try:
            return cls((value or "fact").strip().lower())
        except ValueError:
            return cls.FACT


class Closed(Enum):
    REPLACED = "replaced"  # a newer fact contradicts or updates it
    FORGOTTEN = "forgotten"  # the person (or the owner) asked to forget it


@dataclass(frozen=True)
class Fact:
    id: int
    user_id: str
    text: str
    kind: Kind
    source_turn: str | None
    created_at: datetime
    valid_from: datetime
    valid_to: datetime | None = None
    closed_reason: str | None = None
    # Learnt in a turn that held text someone else wrote: recalled as untrusted data.
    from_third_party: bool = False


def search_terms(text: str) -> list[str]:
    """The words of `text` worth searching for, lower-case, in order, at most 16."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
            seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


def normalised(text: str) -> str:
    """A fact's text as compared for duplicates: case, spacing and end punctuation ignored."""
    return " ".join(_WORD.findall(text.lower()))


_COLUMNS = ("id, user_id, text, kind, source_turn, created_at, valid_from, valid_to,"
            " closed_reason, from_third_party")
_OPEN = "user_id = $1 AND valid_to IS NULL"
# Facts still true, asked with the person's row: recalling for someone Valet knows nothing
# about reads nothing here (bot.db.turn_reads).
HOLDING = Holding("memory", f"EXISTS (SELECT 1 FROM memory_facts WHERE {_OPEN})")


class FactStore:
    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock

    # --- writing ---------------------------------------------------------------------------

    async def add(self, user_id: str, text: str, kind: Kind = Kind.FACT, *,
                  source_turn: str | None = None, replaces: Iterable[int] = (),
                  embedding: bytes | None = None, embedding_model: str | None = None,
                  from_third_party: bool = False) -> Fact | None:
        """Store a fact (closing the person's open facts it replaces). None when the person
        already has an open fact saying the same: duplicates are merged, not stored twice."""
        text = " ".join(text.split())[:MAX_FACT_CHARS]
        if not normalised(text):
            return None
        now = self.clock.now()
        now_holds(user_id, HOLDING.name)
        async with self.db.transaction() as tx:
            if await self._duplicate(tx, user_id, text):
                return None
            fact_id = int(await tx.fetchval(
                "INSERT INTO memory_facts (user_id, text, kind, source_turn, created_at,"
                " valid_from, from_third_party) VALUES ($1,$2,$3,$4,$5,$5,$6) RETURNING id",
                user_id, text, kind.value, source_turn, now, int(from_third_party)))
            if embedding is not None and embedding_model:
                await _put_embedding(tx, user_id, fact_id, embedding, embedding_model)
            if self.db.dialect == "sqlite":
                await tx.execute("INSERT INTO memory_facts_fts (rowid, text, owner)"
                                 " VALUES ($1, $2, $3)", fact_id, text, owner_token(user_id))
            await self._close(tx, user_id, [i for i in replaces if i != fact_id],
                              Closed.REPLACED, now, replaced_by=fact_id)
            await _bump(tx, user_id)
        return Fact(fact_id, user_id, text, kind, source_turn, now, now,
                    from_third_party=from_third_party)

    async def close(self, user_id: str, fact_ids: Iterable[int], reason: Closed) -> list[Fact]:
        """Close this person's open facts among `fact_ids` (another person's ids are never
        touched); returns the facts closed."""
        now = self.clock.now()
        async with self.db.transaction() as tx:
            closed = await self._close(tx, user_id, list(fact_ids), reason, now)
            if closed:
                await _bump(tx, user_id)
        return closed

    async def forget_all(self, user_id: str) -> int:
        """Close every open fact of this person; returns how many."""
        ids = [f.id for f in await self.open_facts(user_id)]
        return len(await self.close(user_id, ids, Closed.FORGOTTEN))

    async def set_embedding(self, user_id: str, fact_id: int, embedding: bytes,
                            model: str) -> None:
        async with self.db.transaction() as tx:
            await _put_embedding(tx, user_id, fact_id, embedding, model)
            await _bump(tx, user_id)

    async def _duplicate(self, tx: Queries, user_id: str, text: str) -> bool:
        key = normalised(text)
        terms = search_terms(text)
        candidates = await self._keyword(tx, user_id, terms, 20, every=True) if terms else \
            await self._recent(tx, user_id, 50)
        return any(normalised(f.text) == key for f in candidates)

    async def _close(self, tx: Queries, user_id: str, ids: Sequence[int], reason: Closed,
                     now: datetime, replaced_by: int | None = None) -> list[Fact]:
        closed = []
        for fact_id in dict.fromkeys(ids):
            row = await tx.fetchrow(
                f"UPDATE memory_facts SET valid_to = $3, closed_reason = $4, replaced_by = $5"
                f" WHERE {_OPEN} AND id = $2 RETURNING {_COLUMNS}",
                user_id, fact_id, now, reason.value, replaced_by)
            if row is None:
                continue  # not this person's, already closed, or no such fact
            if self.db.dialect == "sqlite":
                await tx.execute("DELETE FROM memory_facts_fts WHERE rowid = $1", fact_id)
            closed.append(_fact(row))
        return closed

    # --- reading ---------------------------------------------------------------------------

    async def open_facts(self, user_id: str, limit: int | None = None) -> list[Fact]:
        """The person's facts still true, newest first."""
        if not may_hold(user_id, HOLDING.name):
            return []
        return await self._recent(self.db, user_id, limit)

    async def get(self, user_id: str, fact_id: int) -> Fact | None:
        row = await self.db.fetchrow(
            f"SELECT {_COLUMNS} FROM memory_facts WHERE user_id = $1 AND id = $2",
            user_id, fact_id)
        return _fact(row) if row else None

    async def history(self, user_id: str) -> list[Fact]:
        """Every fact of the person, closed ones too, oldest first (how memory got here)."""
        rows = await self.db.fetch(
            f"SELECT {_COLUMNS} FROM memory_facts WHERE user_id = $1 ORDER BY id", user_id)
        return [_fact(r) for r in rows]

    async def search(self, user_id: str, text: str, limit: int = 20, *,
                     every: bool = False) -> list[Fact]:
        """The person's open facts that share words with `text`, best first (any of the
        words; with `every`, all of them)."""
        terms = search_terms(text)
        if not may_hold(user_id, HOLDING.name):
            return []
        return await self._keyword(self.db, user_id, terms, limit, every=every) \
            if terms else []

    async def by_ids(self, user_id: str, ids: Sequence[int]) -> list[Fact]:
        """The person's open facts among `ids`, in the order given."""
        if not may_hold(user_id, HOLDING.name):
            return []
        return await self._by_ids(self.db, user_id, ids)

    async def _by_ids(self, q: Queries, user_id: str, ids: Sequence[int]) -> list[Fact]:
        if not ids:
            return []
        if self.db.dialect == "sqlite":
            rows = await q.fetch(
                f"SELECT {_COLUMNS} FROM memory_facts WHERE {_OPEN}"
                " AND id IN (SELECT value FROM json_each($2))", user_id, json.dumps(list(ids)))
        else:
            rows = await q.fetch(
                f"SELECT {_COLUMNS} FROM memory_facts WHERE {_OPEN} AND id = ANY($2::bigint[])",
                user_id, list(ids))
        found = {r["id"]: _fact(r) for r in rows}
        return [found[i] for i in ids if i in found]

    async def embeddings(self, user_id: str, model: str) -> list[tuple[int, bytes]]:
        """(id, vector) of the person's open facts embedded with `model`."""
        if not may_hold(user_id, HOLDING.name):
            return []
        rows = await self.db.fetch(
            "SELECT e.fact_id, e.vector FROM memory_embeddings e JOIN memory_facts f"
            " ON f.id = e.fact_id WHERE e.user_id = $1 AND e.model = $2"
            " AND f.valid_to IS NULL", user_id, model)
        return [(int(r["fact_id"]), bytes(r["vector"])) for r in rows]

    async def unembedded(self, model: str, limit: int) -> list[Fact]:
        """Open facts (anyone's) not yet embedded with `model`, oldest first."""
        rows = await self.db.fetch(
            f"SELECT {_COLUMNS} FROM memory_facts f WHERE valid_to IS NULL AND NOT EXISTS"
            " (SELECT 1 FROM memory_embeddings e WHERE e.fact_id = f.id AND e.model = $1)"
            " ORDER BY id LIMIT $2", model, limit)
        return [_fact(r) for r in rows]

    async def version(self, user_id: str) -> int:
        return int(await self.db.fetchval(
            "SELECT version FROM memory_versions WHERE user_id = $1", user_id) or 0)

    async def _recent(self, q: Queries, user_id: str, limit: int | None) -> list[Fact]:
        rows = await q.fetch(
            f"SELECT {_COLUMNS} FROM memory_facts WHERE {_OPEN} ORDER BY id DESC LIMIT $2",
            user_id, limit if limit is not None else 1_000_000)
        return [_fact(r) for r in rows]

    async def _keyword(self, q: Queries, user_id: str, terms: list[str], limit: int, *,
                       every: bool) -> list[Fact]:
        if self.db.dialect == "sqlite":
            # Each term quoted: FTS5 query syntax in a person's words is just words. The
            # owner token narrows the walk; _by_ids checks the person and that it is open.
            words = (" AND " if every else " OR ").join(f'"{t}"' for t in terms)
            match = f'owner:"{owner_token(user_id)}" AND text:({words})'
            hits = await q.fetch(
                "SELECT rowid FROM memory_facts_fts WHERE memory_facts_fts MATCH $1"
                " ORDER BY bm25(memory_facts_fts, 1.0, 0.0) LIMIT $2", match, limit)
            return await self._by_ids(q, user_id, [int(h["rowid"]) for h in hits])
        else:
            # \w+ terms carry no tsquery syntax; OR them (plainto_tsquery would AND them all,
            # and a message rarely holds every word of the fact it is about).
            query = (" & " if every else " | ").join(terms)
            rows = await q.fetch(
                # Terms Postgres drops as stop words ("don") leave an empty query: no hits.
                f"SELECT {_COLUMNS} FROM memory_facts, (SELECT to_tsquery('english', $2) AS"
                " terms, to_tsquery('simple', 'owner' || md5($1)) AS owner) q"
                f" WHERE {_OPEN} AND numnode(q.terms) > 0 AND words @@ (q.owner && q.terms)"
                " ORDER BY ts_rank(words, q.terms) DESC, id DESC"
                " LIMIT $3", user_id, query, limit)
        return [_fact(r) for r in rows]


def owner_token(user_id: str) -> str:
    """One FTS5 token standing for a person (digits: no stemmer changes it)."""
    digest = hashlib.sha256(user_id.encode()).digest()
    return f"o{int.from_bytes(digest[:8], 'big')}"


async def _put_embedding(tx: Queries, user_id: str, fact_id: int, vector: bytes,
                         model: str) -> None:
    await tx.execute(
        "INSERT INTO memory_embeddings (fact_id, user_id, model, vector) VALUES ($1,$2,$3,$4)"
        " ON CONFLICT (fact_id) DO UPDATE SET model = excluded.model, vector = excluded.vector",
        fact_id, user_id, model, vector)


async def _bump(tx: Queries, user_id: str) -> None:
    await tx.execute(
        "INSERT INTO memory_versions (user_id, version) VALUES ($1, 1) ON CONFLICT (user_id)"
        " DO UPDATE SET version = memory_versions.version + 1", user_id)


def _fact(row: Row) -> Fact:
    return Fact(int(row["id"]), row["user_id"], row["text"], Kind.parse(row["kind"]),
                row["source_turn"], row["created_at"], row["valid_from"], row["valid_to"],
                row["closed_reason"], bool(row["from_third_party"]))
