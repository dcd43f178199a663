"""Turns waiting for memory extraction, durable: a failed or interrupted extraction is
retried later (backing off), and a job is claimed before it runs so two passes, or two
processes, never extract the same turn at once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.db import Database, Row

CLAIM = timedelta(minutes=5)  # a claimed job not finished by then is due again
# A failed extraction is tried again a few times, each later than the one before (and, like
# every background request, only when no turn needs the server: bot.llm.person_first).
FIRST_RETRY = timedelta(minutes=5)
LAST_RETRY = timedelta(hours=6)
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Job:
    turn_id: str
    user_id: str
    said: str  # the person's own words of the turn
    answer: str  # the assistant's reply: context for the extractor, never a source
    attempts: int = 0
    # The turn held text someone else wrote: what is learnt from it says so (Fact).
    third_party: bool = False


class ExtractionQueue:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(self, job: Job, now: datetime) -> bool:
        """Queue a turn, claimed by the caller (it runs it now); False if already queued."""
        changed = await self.db.execute(
            "INSERT INTO memory_extractions (turn_id, user_id, said, answer, created_at,"
            " next_attempt_at, third_party) VALUES ($1,$2,$3,$4,$5,$6,$7)"
            " ON CONFLICT (turn_id) DO NOTHING",
            job.turn_id, job.user_id, job.said, job.answer, now, now + CLAIM,
            int(job.third_party))
        return changed > 0

    async def done(self, turn_id: str) -> None:
        await self.db.execute("DELETE FROM memory_extractions WHERE turn_id = $1", turn_id)

    async def failed(self, job: Job, error: str, now: datetime) -> bool:
        """Record a failure; True if it will be retried, False if the job was given up."""
        attempts = job.attempts + 1
        if attempts >= MAX_ATTEMPTS:
            await self.done(job.turn_id)
            return False
        delay = min(FIRST_RETRY * 2 ** (attempts - 1), LAST_RETRY)
        await self.db.execute(
            "UPDATE memory_extractions SET attempts = $2, next_attempt_at = $3,"
            " last_error = $4 WHERE turn_id = $1", job.turn_id, attempts, now + delay,
            error[:500])
        return True

    async def claim_due(self, now: datetime, limit: int = 20) -> list[Job]:
        """Due jobs, each claimed (compare-and-set on its due time) for this caller."""
        rows = await self.db.fetch(
            "SELECT turn_id, user_id, said, answer, attempts, next_attempt_at, third_party"
            " FROM memory_extractions WHERE next_attempt_at <= $1"
            " ORDER BY next_attempt_at LIMIT $2", now, limit)
        claimed = []
        for row in rows:
            won = await self.db.execute(
                "UPDATE memory_extractions SET next_attempt_at = $3"
                " WHERE turn_id = $1 AND next_attempt_at = $2",
                row["turn_id"], row["next_attempt_at"], now + CLAIM)
            if won:
                claimed.append(_job(row))
        return claimed

    async def pending(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(await self.db.fetchval("SELECT COUNT(*) FROM memory_extractions") or 0)
        return int(await self.db.fetchval(
            "SELECT COUNT(*) FROM memory_extractions WHERE user_id = $1", user_id) or 0)


def _job(row: Row) -> Job:
    return Job(row["turn_id"], row["user_id"], row["said"], row["answer"],
               int(row["attempts"]), bool(row["third_party"]))
