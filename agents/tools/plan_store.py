"""The person's plan for their current request (`update_plan`): its steps, kept per user."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

import pydantic

from bot.db import Database
from bot.db.turn_reads import Holding, may_hold, now_holds

STATUS_MARK = {"pending": "[ ]", "in_progress": "[in progress]", "completed": "[done]"}

# A plan, asked with the person's row: a turn of someone without one reads nothing here.
HOLDING = Holding("plan", "EXISTS (SELECT 1 FROM plans WHERE user_id = $1)")


class PlanStep(pydantic.BaseModel):
    step: str = pydantic.Field(description="What to do, in a few words")
    status: Literal["pending", "in_progress", "completed"] = "pending"


class PlanStore:
    """One plan per user (there is one conversation per user)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def set(self, user_id: str, steps: list[PlanStep], at: datetime) -> None:
        if not steps:
            await self.db.execute("DELETE FROM plans WHERE user_id = $1", user_id)
            return
        now_holds(user_id, HOLDING.name)
        await self.db.execute(
            "INSERT INTO plans (user_id, steps, updated_at) VALUES ($1, $2, $3)"
            " ON CONFLICT (user_id) DO UPDATE SET steps = excluded.steps,"
            " updated_at = excluded.updated_at",
            user_id, json.dumps([s.model_dump() for s in steps]), at)

    async def get(self, user_id: str) -> list[PlanStep]:
        if not may_hold(user_id, HOLDING.name):
            return []
        raw = await self.db.fetchval("SELECT steps FROM plans WHERE user_id = $1", user_id)
        return [PlanStep.model_validate(s) for s in json.loads(raw)] if raw else []

    async def context_note(self, user_id: str) -> str | None:
        """The plan for the system prompt, while any step is unfinished."""
        steps = await self.get(user_id)
        if not steps or all(s.status == "completed" for s in steps):
            return None
        return render(steps, heading="Your plan for the user's current request (keep it "
                      "current with update_plan; clear it with an empty list when done or "
                      "when the user moves on):")


def render(steps: list[PlanStep], heading: str = "Plan:") -> str:
    lines = [f"{i}. {STATUS_MARK[s.status]} {s.step}" for i, s in enumerate(steps, 1)]
    return "\n".join([heading, *lines])
