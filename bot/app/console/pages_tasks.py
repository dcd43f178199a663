"""Tasks: each person's reminders and scheduled tasks with their next run in the person's
zone; pause, resume, run now, delete (through the task service, as the chat and the CLI do);
their recent runs and what became of each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console, back
from bot.people.console_login import ConsoleSession
from triggers.describe import schedule_in_words, when_in_words
from triggers.model import Task, TaskStatus, TriggerKind
from triggers.service import TaskError

PAGE = "/console/tasks"
RUNS = 10
FINISHED = (TaskStatus.COMPLETED, TaskStatus.EXPIRED)


@dataclass(frozen=True)
class TaskRow:
    task: Task
    schedule: str
    next_words: str  # "tomorrow at 7:30"

    @property
    def can_pause(self) -> bool:
        return self.task.status in (TaskStatus.ACTIVE, TaskStatus.PENDING_APPROVAL)

    @property
    def can_resume(self) -> bool:
        return self.task.status in (TaskStatus.PAUSED, TaskStatus.DISABLED)


def task_row(task: Task, now: datetime) -> TaskRow:
    upcoming = task.status is TaskStatus.ACTIVE and task.next_run_at is not None and \
        task.kind is not TriggerKind.CONDITION
    words = when_in_words(task.next_run_at, now, task.timezone) \
        if upcoming and task.next_run_at else ""
    return TaskRow(task, schedule_in_words(task), words)


def routes(console: Console) -> list[web.RouteDef]:
    app = console.app
    service = app.triggers.service

    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        now = console.now()
        people: list[tuple[Any, list[TaskRow], list[Any], int]] = []
        for user in (await console.people()).values():
            tasks = await service.store.of_user(user.id, include_finished=True)
            live = [task_row(t, now) for t in tasks if t.status not in FINISHED]
            runs = await service.store.recent_runs(user.id, RUNS)
            if live or runs:
                people.append((user, live, runs, len(tasks) - len(live)))
        return console.page(request, session, "tasks.html", title="Tasks", people=people)

    async def act(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        action = request.match_info["action"]
        task = await service.store.get(request.match_info["id"])
        if task is None:
            raise back(PAGE, "No such task (it may have been deleted).", failed=True)
        target = f"task {task.id} ({task.name}) of {task.user_id}"
        try:
            said = await _do(console, action, task)
        except TaskError as err:
            await console.record(request, session, action, target, f"refused: {err}")
            raise back(PAGE, str(err), failed=True) from None
        await console.record(request, session, action, target, said)
        raise back(PAGE, said)

    return [web.get(PAGE, owner_only(console, page)),
            web.post(PAGE + "/{id}/{action:pause|resume|run|delete}", owner_only(console, act))]


async def _do(console: Console, action: str, task: Task) -> str:
    service = console.app.triggers.service
    if action == "pause":
        await service.pause(task.user_id, task.id)
        return f"Paused “{task.name}”."
    if action == "resume":
        await service.resume(task.user_id, task.id)
        return f"Resumed “{task.name}”."
    if action == "delete":
        await service.delete(task.user_id, task.id)
        return f"Deleted “{task.name}”."
    outcome = await console.app.triggers.engine.run_now(task.id)
    return (f"Ran “{task.name}” now: {outcome.value}." if outcome else
            f"“{task.name}” already ran this second.")
