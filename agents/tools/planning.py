"""Tools for multi-step work: `ask_user` (pause the turn for an answer), `update_plan` (a plan
the LLM keeps current on long requests, shown in its system context), `cancel_task` (drop a
task that waits for the user).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

import pydantic

from agents.services import services_of
from bot.db import Database
from bot.db.turn_reads import Holding, may_hold, now_holds
from bot.tasks.model import PausedTask
from bot.tools import ToolExecutionContext, ToolOutcome, ToolStatus, tool

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


def plans_of(ctx: ToolExecutionContext) -> PlanStore:
    return services_of(ctx).stores.plans


@tool(progress="asking you")
async def ask_user(ctx: ToolExecutionContext, question: str) -> ToolOutcome:
    """Ask the user one question and wait for the answer: their next message is the answer,
    and you continue from it then. Use it only when you cannot go on without something only
    the user knows (a choice, a missing detail); ask one clear, short question.

    Args:
        question: The question, exactly as the user should read it.
    """
    question = " ".join(question.split())
    if not question:
        raise ValueError("the question is empty")
    task = PausedTask(kind="ask_user", name="ask_user", status="WAITING_FOR_INPUT",
                      question=question, label="request", call_id=ctx.call_id,
                      schema_version="1")
    return ToolOutcome(ctx.call_id, "ask_user", ToolStatus.WAITING,
                       f"Paused: waiting for the user's answer to “{question}”. Their next "
                       "message is the answer.", pause=task, result_status="WAITING_FOR_INPUT")


@tool(progress="updating the plan")
async def update_plan(ctx: ToolExecutionContext, steps: list[PlanStep]) -> str:
    """Keep a short plan for a request that takes several steps. Call it with the steps first,
    then again with the full list whenever a step starts or finishes. The plan is shown to you
    on later turns while a step is unfinished; an empty list clears it.

    Args:
        steps: Every step, in order, each with its status.
    """
    in_progress = sum(s.status == "in_progress" for s in steps)
    if in_progress > 1:
        raise ValueError("only one step can be in_progress at a time")
    await plans_of(ctx).set(ctx.user_id, steps, ctx.clock.now())
    return render(steps, "Plan saved:") if steps else "Plan cleared."


@tool(progress="cancelling")
async def cancel_task(ctx: ToolExecutionContext, task_id: str) -> str:
    """Cancel a task that is waiting for the user's answer (listed in your context with its
    id), when the user no longer wants it.

    Args:
        task_id: The waiting task's id.
    """
    task = await services_of(ctx).pool.cancel(ctx.user_id, task_id.strip())
    if task is None:
        raise ValueError(f"no waiting task has the id {task_id!r}")
    return f"Cancelled the waiting {task.label} (it had asked “{task.question}”)."

