"""Tools for the LLM: the person's scheduled tasks, from plain language.

Each acts only on the calling user's tasks (the service checks ownership); errors come back
as plain sentences the LLM can repeat."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import CHANGES, READS, tool
from triggers.describe import task_line
from triggers.model import ConditionCheck
from triggers.service import Owner, TaskError, TaskService


def _service(ctx: ToolExecutionContext) -> TaskService:
    return services_of(ctx).tasks


def _owner(ctx: ToolExecutionContext) -> Owner:
    return Owner(ctx.user_id, ctx.timezone, created_from=f"{ctx.channel or 'chat'}:{ctx.call_id}",
                 channel=ctx.channel or None)


def _done(ctx: ToolExecutionContext, verb: str, task: Any) -> str:
    return f"{verb} {task_line(task, ctx.clock.now())}"


async def _by_id(ctx: ToolExecutionContext, task_id: str,
                 act: Callable[[str, str], Awaitable[Any]], done: str) -> str:
    """Pause, resume or delete one of the user's tasks: what happened, or why not."""
    try:
        task = await act(ctx.user_id, task_id)
    except TaskError as err:
        return f"Not {done.lower()}: {err}"
    return f"{done} {task.id}: {task.name}."


@tool(progress="scheduling", does=CHANGES)
async def create_scheduled_task(ctx: ToolExecutionContext, instruction: str, schedule: str,
                                name: str = "", channel: str = "",
                                quiet_when_nothing: bool = False) -> str:
    """Schedule something to be done for the user later or repeatedly (you will be asked to do
    `instruction` at each run and your answer is sent to them). For a plain reminder use
    draft_reminder instead.

    Args:
        instruction: What to do at each run, e.g. "check my notes for anything due today".
        schedule: When, as the user said it, in their timezone: "every day at 7:30",
            "weekdays at 8am", "every sunday at 18:00", "every 2 hours", "tomorrow at 3pm",
            or a 5-field cron line ("30 7 * * 1-5"; day 0 is Sunday).
        name: A short name for the task.
        channel: Where results go (telegram, sms, console); empty: the user's preferred one.
        quiet_when_nothing: True when a run with nothing to report should send nothing.
    """
    try:
        task = await _service(ctx).schedule(
            _owner(ctx), name=name, schedule=schedule, instruction=instruction,
            channel=channel or None, quiet_when_nothing=quiet_when_nothing)
    except TaskError as err:
        return f"Not scheduled: {err}"
    return _done(ctx, "Scheduled", task)


@tool(progress="setting up your morning summary", does=CHANGES)
async def turn_on_morning_summary(ctx: ToolExecutionContext, schedule: str = "every day at 7:30",
                                  channel: str = "") -> str:
    """Turn on the user's morning summary (today's weather, calendar, reminders, to-dos and
    anything waiting for their approval, as far as this assistant can look them up).

    Args:
        schedule: When, e.g. "every day at 7:30" or "weekdays at 6:45".
        channel: Where it goes; empty: the user's preferred channel.
    """
    try:
        task = await _service(ctx).morning_summary(_owner(ctx), schedule, channel or None)
    except TaskError as err:
        return f"Not turned on: {err}"
    return _done(ctx, "Turned on", task)


@tool(progress="setting up a watch", does=CHANGES)
async def create_event_task(ctx: ToolExecutionContext, instruction: str, source: str,
                            type: str = "*", fields: dict[str, str] | None = None,
                            name: str = "") -> str:
    """Do something whenever an event arrives (from a connected service or a webhook).

    Args:
        instruction: What to do when it happens.
        source: The event's source, e.g. "email" ("*" for any).
        type: The event's type, e.g. "received" ("*" for any; "door.*" patterns work).
        fields: Values the event's data must have, e.g. {"from": "*@amazon.com"}.
        name: A short name for the task.
    """
    task = await _service(ctx).on_event(_owner(ctx), name=name, instruction=instruction,
                                        source=source, type=type, fields=fields)
    return _done(ctx, "Watching:", task)


@tool(progress="setting up a watch", does=CHANGES)
async def create_condition_task(ctx: ToolExecutionContext, instruction: str, check_tool: str,
                                op: str, value: str, check_arguments: dict[str, Any] | None
                                = None, every_minutes: int = 15, cooldown_minutes: int = 60,
                                name: str = "") -> str:
    """Do something once when a condition becomes true (checked by calling a tool regularly).

    Args:
        instruction: What to do when it becomes true.
        check_tool: The tool whose result is checked.
        op: One of == != > >= < <= contains.
        value: What the result is compared with (numbers are compared as numbers).
        check_arguments: Arguments for the check tool.
        every_minutes: How often to check.
        cooldown_minutes: Not again within this time after firing.
        name: A short name for the task.
    """
    compared: Any = value
    try:
        compared = float(value)
    except ValueError:
        pass
    check = ConditionCheck(check_tool, dict(check_arguments or {}), op, compared,
                           cooldown_seconds=cooldown_minutes * 60)
    try:
        task = await _service(ctx).when(_owner(ctx), name=name, instruction=instruction,
                                        check=check, every=timedelta(minutes=every_minutes))
    except TaskError as err:
        return f"Not set up: {err}"
    return _done(ctx, "Watching:", task)


@tool(progress="checking your tasks", does=READS)
async def list_scheduled_tasks(ctx: ToolExecutionContext) -> str:
    """List the user's scheduled tasks and reminders with their next runs and ids."""
    return await _service(ctx).listing(ctx.user_id)


@tool(progress="changing the task", does=CHANGES)
async def change_scheduled_task(ctx: ToolExecutionContext, task_id: str, schedule: str = "",
                                instruction: str = "", channel: str = "") -> str:
    """Change a scheduled task (only what is given changes).

    Args:
        task_id: The task's id, from list_scheduled_tasks.
        schedule: The new schedule, as the user said it.
        instruction: The new instruction (or reminder text).
        channel: Where results go now.
    """
    try:
        task = await _service(ctx).change(ctx.user_id, task_id, schedule=schedule,
                                          instruction=instruction, channel=channel)
    except TaskError as err:
        return f"Not changed: {err}"
    return _done(ctx, "Changed:", task)


@tool(progress="pausing the task", does=CHANGES)
async def pause_scheduled_task(ctx: ToolExecutionContext, task_id: str) -> str:
    """Pause a scheduled task until the user resumes it.

    Args:
        task_id: The task's id, from list_scheduled_tasks.
    """
    return await _by_id(ctx, task_id, _service(ctx).pause, "Paused")


@tool(progress="resuming the task", does=CHANGES)
async def resume_scheduled_task(ctx: ToolExecutionContext, task_id: str) -> str:
    """Resume a paused task (runs missed while paused are not made up).

    Args:
        task_id: The task's id, from list_scheduled_tasks.
    """
    return await _by_id(ctx, task_id, _service(ctx).resume, "Resumed")


@tool(progress="deleting the task", does=CHANGES)
async def delete_scheduled_task(ctx: ToolExecutionContext, task_id: str) -> str:
    """Delete a scheduled task for good.

    Args:
        task_id: The task's id, from list_scheduled_tasks.
    """
    return await _by_id(ctx, task_id, _service(ctx).delete, "Deleted")


@tool(triggered_only=True, does=READS)
async def nothing_to_report(ctx: ToolExecutionContext, reason: str = "") -> str:
    """Call this in a [Scheduled Task], [Event Trigger] or [Condition Trigger] turn when the
    run found nothing worth telling the user; tasks set to stay quiet then send nothing.

    Args:
        reason: Why there is nothing to report (kept in the run's record).
    """
    marked = await _service(ctx).nothing_to_report(ctx.user_id, ctx.triggered_by)
    if not marked:
        return "Only a triggered run can be marked as having nothing to report."
    return "Noted: nothing to report. Answer with one short line."
