"""Event bursts, coalesced: an event task runs at once on its first event, then at most once a
window (`triggers.event_window_seconds`): events that arrive within the window are held and
handed together to one run when it ends. 300 events in 15 s are two runs, not 300 turns, and
every event reaches exactly one run.

Every event a task takes is stored first (`trigger_events_held`), and names its run once it
has one, so a run redone after a crash reads the same events; a finished run's events go.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from bot.db import Database, Queries
from triggers.events import Event

HeldEvent = Mapping[str, Any]  # source, type, data


class EventWindows:
    def __init__(self, db: Database, window: timedelta) -> None:
        self.db = db
        self.window = window

    def opens(self, last_fired_at: datetime | None, now: datetime) -> bool:
        """Whether an event now may run at once (no run of the task in the last window)."""
        return last_fired_at is None or now - last_fired_at >= self.window

    async def hold(self, task_id: str, event: Event, at: datetime,
                   run_key: str | None = None, q: Queries | None = None) -> bool:
        """Keep the event for the task (with its run, when it runs at once); False when the
        task holds it already (the same event delivered twice)."""
        return await (q or self.db).execute(
            "INSERT INTO trigger_events_held (task_id, event_id, source, type, data,"
            " received_at, run_key) VALUES ($1, $2, $3, $4, $5, $6, $7)"
            " ON CONFLICT (task_id, event_id) DO NOTHING", task_id, event.id, event.source,
            event.type, json.dumps(dict(event.data), default=str), at, run_key) > 0

    async def take(self, task_id: str, run_key: str, q: Queries) -> int:
        """The events held without a run go to this one; how many."""
        return await q.execute(
            "UPDATE trigger_events_held SET run_key = $2 WHERE task_id = $1"
            " AND run_key IS NULL", task_id, run_key)

    async def of_run(self, task_id: str, run_key: str) -> tuple[HeldEvent, ...]:
        rows = await self.db.fetch(
            "SELECT source, type, data FROM trigger_events_held WHERE task_id = $1"
            " AND run_key = $2 ORDER BY seq", task_id, run_key)
        return tuple({"source": r["source"], "type": r["type"],
                      "data": json.loads(r["data"])} for r in rows)

    async def done(self, task_id: str, run_key: str) -> None:
        await self.db.execute("DELETE FROM trigger_events_held WHERE task_id = $1"
                              " AND run_key = $2", task_id, run_key)
