"""Tools for multi-step work: `ask_user` (pause the turn for an answer), `update_plan` (a plan
the LLM keeps current on long requests, shown in its system context), `cancel_task` (drop a
task that waits for the user).
"""

from __future__ import annotations

from agents.services import services_of
from agents.tools.plan_store import PlanStep, PlanStore, render
from bot.contracts.pause import PausedTask
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import CHANGES, READS, ToolOutcome, ToolStatus, tool


def plans_of(ctx: ToolExecutionContext) -> PlanStore:
    return services_of(ctx).stores.plans


@tool(progress="asking you", does=READS)
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


@tool(progress="updating the plan", does=READS)
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


@tool(progress="cancelling", does=CHANGES)
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

