"""Embedding similarity for memory: the embeddings client and a per-person vector index.

Vectors come from the LLM endpoint's own `/embeddings` (through the `openai` client), are
stored unit-length as float32 bytes next to each fact, and are searched in memory: the index
keeps one matrix per person and reloads it only when the person's memory version moved (one
small query per recall), so a recall over 10,000 facts is one matrix-vector product.

When the endpoint fails, recall goes on without it (keywords and recency) and the client
rests for a while, so a dead endpoint does not add its timeout to every turn.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

# One matrix-vector product over 10,000 facts takes well under a millisecond on one thread;
# OpenBLAS's thread pool makes it several on a busy machine and competes with the event
# loop (measured with `make bench`: p50 8 ms with the pool, 2.7 ms without). Set before
# numpy loads (nothing else in Valet imports it); an operator's own setting wins. numpy
# itself is imported where vectors are made or searched: a process with no embedding model
# never loads it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import openai

from bot.contracts.clock import Clock
from bot.memory.facts import FactStore

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

REST_AFTER_FAILURE = timedelta(seconds=60)
MIN_SIMILARITY = 0.2  # below this a "nearest" fact has nothing to do with the message
CACHED_PEOPLE = 256  # matrices kept; the least recently recalled person's goes first


class EmbeddingsUnavailable(Exception):
    """The endpoint could not embed (down, refused, wrong model): recall goes on without."""


def to_bytes(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def unit(values: list[float]) -> np.ndarray:
    import numpy as np

    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


class Embedder:
    """Texts to unit vectors through an OpenAI-compatible `/embeddings`."""

    def __init__(self, *, base_url: str | None, api_key: str, model: str, clock: Clock,
                 timeout: float = 5.0) -> None:
        self.model = model
        self.clock = clock
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0,
                                          timeout=timeout)
        self._resting_until: datetime | None = None  # the endpoint failed: rest until then

    async def embed(self, texts: list[str]) -> list[np.ndarray]:
        now = self.clock.now()
        if self._resting_until is not None and now < self._resting_until:
            raise EmbeddingsUnavailable("the embeddings endpoint failed a moment ago")
        try:
            answer = await self._client.embeddings.create(model=self.model, input=texts)
            vectors = [unit(d.embedding) for d in sorted(answer.data, key=lambda d: d.index)]
            if len(vectors) != len(texts):
                raise EmbeddingsUnavailable(f"asked for {len(texts)} vectors, got "
                                            f"{len(vectors)}")
        except (openai.OpenAIError, ValueError, TypeError) as err:
            self._resting_until = now + REST_AFTER_FAILURE
            raise EmbeddingsUnavailable(f"{type(err).__name__}: {err}") from err
        self._resting_until = None  # it answered: no more resting
        return vectors

    async def close(self) -> None:
        await self._client.close()


@dataclass(frozen=True)
class _Matrix:
    version: int
    ids: np.ndarray
    vectors: np.ndarray  # one unit row per id


class VectorIndex:
    """The person's open facts nearest to a vector (cosine similarity)."""

    def __init__(self, store: FactStore, model: str) -> None:
        self.store = store
        self.model = model
        self._cache: OrderedDict[str, _Matrix] = OrderedDict()

    async def nearest(self, user_id: str, query: np.ndarray, k: int) -> list[int]:
        """Ids of the person's k open facts most similar to `query`, best first."""
        import numpy as np

        matrix = await self._matrix(user_id)
        if matrix.ids.size == 0 or matrix.vectors.shape[1] != query.shape[0]:
            return []
        scores = matrix.vectors @ query
        k = min(k, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [int(matrix.ids[i]) for i in top if scores[i] >= MIN_SIMILARITY]

    async def _matrix(self, user_id: str) -> _Matrix:
        import numpy as np

        version = await self.store.version(user_id)
        cached = self._cache.get(user_id)
        if cached is not None and cached.version == version:
            self._cache.move_to_end(user_id)
            return cached
        rows = await self.store.embeddings(user_id, self.model)
        if rows:
            ids = np.fromiter((i for i, _ in rows), dtype=np.int64, count=len(rows))
            vectors = np.vstack([np.frombuffer(v, dtype=np.float32) for _, v in rows])
        else:
            ids, vectors = np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
        matrix = _Matrix(version, ids, vectors)
        self._cache[user_id] = matrix
        self._cache.move_to_end(user_id)
        while len(self._cache) > CACHED_PEOPLE:
            self._cache.popitem(last=False)
        return matrix
