"""AgentPool: the tasks waiting for a person (an agent missing a field or waiting for a yes, an
`ask_user` question), per user, durable in the database.

A waiting task is explicit state, not something that lives only in the prompt: it survives
restarts and history trimming, expires after a TTL (the user is told), is capped per user (the
oldest is dropped, and the user is told), and carries the `schema_version` of the agent's
InputFields so a changed agent is never restored from stale data.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.contracts.clock import Clock
from bot.contracts.pause import PausedTask
from bot.db import Database, Row
from bot.db.turn_reads import Holding, may_hold, now_holds
from bot.tasks.model import PoolNotice

log = logging.getLogger(__name__)

# Any task waiting for the person (live or expired: a turn tells of an expiry), asked with
# their row: a turn of someone with none reads nothing here (bot.db.turn_reads).
HOLDING = Holding("tasks", "EXISTS (SELECT 1 FROM agent_pool WHERE user_id = $1)")


class AgentPool:
    def __init__(self, db: Database, clock: Clock, *, ttl: timedelta = timedelta(hours=24),
                 max_per_user: int = 5) -> None:
        self.db = db
        self.clock = clock
        self.ttl = ttl
        self.max_per_user = max_per_user

    async def pause(self, user_id: str, tasks: list[PausedTask], *, turn_id: str = "",
                    limit_for: Callable[[str], int | None] | None = None) -> list[PoolNotice]:
        """Store the tasks one turn paused. Over a limit (per user, or an agent's
        max_instances) the oldest waiting tasks are dropped; the notices say which."""
        now = self.clock.now()
        seq = await self._next_seq(user_id)
        for position, task in enumerate(tasks):
            task.id = task.id or uuid.uuid4().hex[:12]
            task.user_id, task.position = user_id, position
            task.created_at = task.created_at or now
            await self._insert(task, now, seq, turn_id)
        notices = []
        for name in dict.fromkeys(t.name for t in tasks):
            limit = limit_for(name) if limit_for else None
            if limit:
                notices += await self._evict(user_id, limit, name)
        return notices + await self._evict(user_id, self.max_per_user)

    async def put_back(self, task: PausedTask) -> None:
        """A task taken to be resumed that is still waiting (asked again); its TTL restarts."""
        await self._insert(task, self.clock.now(), await self._next_seq(task.user_id), "")

    async def touch(self, task: PausedTask) -> None:
        """The user was asked again: the task is the newest question and its TTL restarts."""
        now = self.clock.now()
        await self.db.execute(
            "UPDATE agent_pool SET asked_at = $1, expires_at = $2, question = $3, asked_seq = $4"
            " WHERE id = $5 AND user_id = $6",
            now, now + self.ttl, task.question, await self._next_seq(task.user_id), task.id,
            task.user_id)

    async def waiting(self, user_id: str) -> list[PausedTask]:
        """The user's live tasks, the most recently asked question first."""
        if not may_hold(user_id, HOLDING.name):
            return []
        rows = await self.db.fetch(
            "SELECT * FROM agent_pool WHERE user_id = $1 AND expires_at > $2"
            " ORDER BY asked_seq DESC, position ASC", user_id, self.clock.now())
        return [_task(r) for r in rows]

    async def get(self, user_id: str, task_id: str) -> PausedTask | None:
        row = await self.db.fetchrow(
            "SELECT * FROM agent_pool WHERE id = $1 AND user_id = $2", task_id, user_id)
        return _task(row) if row else None

    async def take(self, task: PausedTask) -> bool:
        """Remove a task to resume (or finish) it; False when it is already gone, so two
        deliveries of one message cannot resume it twice."""
        return await self.db.execute(
            "DELETE FROM agent_pool WHERE id = $1 AND user_id = $2", task.id, task.user_id) > 0

    async def cancel(self, user_id: str, task_id: str) -> PausedTask | None:
        task = await self.get(user_id, task_id)
        if task is None or not await self.take(task):
            return None
        return task

    async def discard(self, task: PausedTask, why: str) -> PoolNotice | None:
        if not await self.take(task):
            return None
        log.warning("discarded paused %s %s of %s: %s", task.name, task.id, task.user_id, why)
        return PoolNotice(task.user_id, task, "dropped", why)

    async def sweep(self, user_id: str | None = None) -> list[PoolNotice]:
        """Remove expired tasks (one user's, or everyone's) and say which."""
        now = self.clock.now()
        if user_id is None:
            rows = await self.db.fetch(
                "SELECT * FROM agent_pool WHERE expires_at <= $1 ORDER BY user_id, asked_seq",
                now)
        elif not may_hold(user_id, HOLDING.name):
            return []
        else:
            rows = await self.db.fetch(
                "SELECT * FROM agent_pool WHERE user_id = $1 AND expires_at <= $2"
                " ORDER BY asked_seq", user_id, now)
        notices = []
        for task in map(_task, rows):
            if await self.take(task):
                log.info("paused %s %s of %s expired", task.name, task.id, task.user_id)
                notices.append(PoolNotice(task.user_id, task, "expired"))
        return notices

    async def _next_seq(self, user_id: str) -> int:
        # Turns of one user run one at a time (the gateway serialises them), so no race.
        current = await self.db.fetchval(
            "SELECT MAX(asked_seq) FROM agent_pool WHERE user_id = $1", user_id)
        return int(current or 0) + 1

    async def _insert(self, task: PausedTask, now: datetime, seq: int, turn_id: str) -> None:
        task.asked_at, task.expires_at = now, now + self.ttl
        now_holds(task.user_id, HOLDING.name)
        await self.db.execute(
            "INSERT INTO agent_pool (id, user_id, kind, name, label, status, question, call_id,"
            " schema_version, fields, state, asked_seq, position, turn_id, created_at,"
            " asked_at, expires_at)"
            " VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)",
            task.id, task.user_id, task.kind, task.name, task.label, task.status, task.question,
            task.call_id, task.schema_version, json.dumps(task.fields), json.dumps(task.state),
            seq, task.position, turn_id, task.created_at, now, task.expires_at)

    async def _evict(self, user_id: str, limit: int, name: str | None = None
                     ) -> list[PoolNotice]:
        live = [t for t in await self.waiting(user_id) if name is None or t.name == name]
        if len(live) <= limit:
            return []
        oldest_first = live[::-1]  # `waiting` lists the latest question first
        notices = []
        for task in oldest_first[:len(live) - limit]:
            if await self.take(task):
                why = f"more than {limit} waiting" + (f" {task.label} tasks" if name else "")
                log.info("evicted paused %s %s of %s: %s", task.name, task.id, user_id, why)
                notices.append(PoolNotice(user_id, task, "evicted", str(limit)))
        return notices


def _task(row: Row) -> PausedTask:
    return PausedTask(
        kind=row["kind"], name=row["name"], status=row["status"], question=row["question"],
        label=row["label"], call_id=row["call_id"], schema_version=row["schema_version"],
        fields=json.loads(row["fields"]), state=json.loads(row["state"]), id=row["id"],
        user_id=row["user_id"], position=row["position"], created_at=row["created_at"],
        asked_at=row["asked_at"], expires_at=row["expires_at"])
