"""Memory recall: one person with 10,000 facts; the recall step's work for one message
(keyword search, the fill by recency, the budget) on SQLite and on Postgres, then with
embeddings computed in advance (the message's vector too: the endpoint's round trip is the
provider's, not Valet's). Goal: p99 < 5 ms on SQLite, < 10 ms on Postgres. Floor, same
database: the same recall for a person with no facts (the statements alone).

VALET_BENCH_MEMORY_FACTS changes the size (default 10,000).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from typing import Any

from bot.app.database import open_database
from bot.contracts.clock import SystemClock
from bot.db import Database
from bot.memory.facts import FactStore, Kind
from bot.memory.recall import Recaller, render, within_budget
from bot.memory.vectors import VectorIndex, to_bytes, unit
from bot.people.users import UserStore
from tests.bench.size import sized
from tests.bench.stats import line, pct

FACTS = int(os.environ.get("VALET_BENCH_MEMORY_FACTS", sized(10000, 200)))
QUERIES = sized(500, 20)
GOAL_P99_MS = {"SQLite": 5.0, "Postgres": 10.0}
DIMENSIONS = 384
USER = "bench-person"
_SUBJECTS = ["Sister", "Daughter", "Friend", "Colleague", "Neighbour", "Dentist", "Partner",
             "Brother", "Manager", "Coach"]
_VERBS = ["likes", "prefers", "visited", "booked", "plays", "studies", "bought", "works on",
          "cooks", "avoids"]


def _vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(size)]


def _fact_text(rng: random.Random, words: list[str], n: int) -> str:
    return (f"{rng.choice(_SUBJECTS)} {rng.choice(words).title()} {rng.choice(_VERBS)} "
            f"{rng.choice(words)} {rng.choice(words)} since {2000 + n % 25}")


def _message(rng: random.Random, words: list[str]) -> str:
    return (f"Can you remind me what my {rng.choice(_SUBJECTS).lower()} "
            f"{rng.choice(words)} said about {rng.choice(words)} and {rng.choice(words)}?")


def _random_vector(rng: random.Random) -> list[float]:
    # numpy is left to bot.memory.vectors to load, as in Valet itself (it sets the BLAS
    # threads before numpy starts).
    return [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]


class _PrecomputedEmbedder:
    """The message's vector, computed in advance: only Valet's side is measured."""

    model = "bench-embed"

    def __init__(self, vectors: dict[str, Any]) -> None:
        self.vectors = vectors

    async def embed(self, texts: list[str]) -> list[Any]:
        return [self.vectors[t] for t in texts]


async def _fill(db: Database, embedded: bool) -> tuple[FactStore, list[str], list[str]]:
    rng = random.Random(15)
    words = _vocabulary(rng)
    clock = SystemClock()
    await UserStore(db).ensure(USER, display_name="Bench", timezone="UTC", is_owner=False,
                               at=clock.now())
    store = FactStore(db, clock)
    for n in range(FACTS):
        vector = to_bytes(unit(_random_vector(rng))) if embedded else None
        await store.add(USER, _fact_text(rng, words, n), Kind.FACT, source_turn=f"t{n}",
                        embedding=vector, embedding_model="bench-embed" if embedded else None)
    # The steady state of a database that has been running: statistics gathered, and on
    # Postgres the GIN index's pending list merged (autovacuum would do it).
    await db.execute("VACUUM ANALYZE memory_facts" if db.dialect == "postgres" else "ANALYZE")
    return store, words, [_message(rng, words) for _ in range(QUERIES)]


async def _measure(recaller: Recaller, messages: list[str], user: str = USER) -> list[float]:
    for message in messages[:20]:  # warm caches (and the vector index's matrix)
        await recaller.relevant(user, message)
    times = []
    for message in messages:
        start = time.perf_counter()
        render(within_budget(await recaller.relevant(user, message), 300))
        times.append((time.perf_counter() - start) * 1000)
    return times


def _goal(label: str, times: list[float]) -> str:
    goal = GOAL_P99_MS[label]
    p99 = pct(times, 99)
    return f"    goal p99 < {goal:.0f} ms: {p99:.2f} ms ({'met' if p99 < goal else 'NOT MET'})"


async def _backend(label: str, url: str, embedded: bool) -> list[str]:
    db = await open_database(url)
    try:
        start = time.perf_counter()
        store, _, messages = await _fill(db, embedded)
        loaded = time.perf_counter() - start
        if not embedded:
            times = await _measure(Recaller(store), messages)
            floor = await _measure(Recaller(store), messages, user="nobody")
            return [line(f"{label}: keywords + recency", times),
                    line(f"floor: {label}, a person with no facts", floor), _goal(label, times),
                    f"  ({FACTS} facts stored in {loaded:.1f} s)"]
        rng = random.Random(16)
        queries = {m: unit(_random_vector(rng)) for m in messages}
        recaller = Recaller(store, _PrecomputedEmbedder(queries),  # type: ignore[arg-type]
                            VectorIndex(store, "bench-embed"))
        times = await _measure(recaller, messages)
        return [line(f"{label}: keywords + embeddings ({DIMENSIONS} d)", times),
                _goal(label, times)]
    finally:
        await db.close()


async def run() -> list[str]:
    load = os.getloadavg()[0]
    out = [f"Memory recall, one person with {FACTS} facts (goal p99 < 5 ms SQLite, "
           f"< 10 ms Postgres); load average {load:.1f} on {os.cpu_count()} cores"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await _backend("SQLite", f"sqlite:///{tmp}/k.db", embedded=False)
        out += await _backend("SQLite", f"sqlite:///{tmp}/e.db", embedded=True)
    try:
        from tests.servers import ThrowawayPostgres

        server = ThrowawayPostgres().start()
    except (FileNotFoundError, RuntimeError) as err:
        return [*out, f"  Postgres skipped: {err}"]
    try:
        out += await _backend("Postgres", server.create_database("bench_memory_k"), False)
        out += await _backend("Postgres", server.create_database("bench_memory_e"), True)
    finally:
        server.stop()
    return out
