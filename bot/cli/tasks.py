"""`valet tasks list|add|remove|pause|resume|run-now`: scheduled tasks from a shell.

Like the other admin commands it works on the database directly; run-now asks the running
server to run the task (bot.app.terminal, or the scheduler through Redis), so what it sends
goes at once."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from bot.cli.admin import table
from bot.config import Settings
from triggers.describe import schedule_in_words, task_line
from triggers.model import RunOutcome, Task, TaskStatus
from triggers.service import Owner, TaskError


def add_task_commands(sub: argparse._SubParsersAction) -> None:
    tasks = sub.add_parser("tasks", help="scheduled tasks: list, add, remove, pause, resume, "
                                         "run-now")
    actions = tasks.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every task with its next run")
    listing.add_argument("--user", help="only this user (id, or channel:address)")
    add = actions.add_parser("add", help="schedule a task for a user")
    add.add_argument("--user", required=True, help="user id, or channel:address")
    add.add_argument("--schedule", required=True,
                     help="“every day at 7:30”, “weekdays at 8am”, “tomorrow 15:00”, a cron line")
    what = add.add_mutually_exclusive_group(required=True)
    what.add_argument("--instruction", help="what the assistant does at each run")
    what.add_argument("--remind", help="a plain reminder's text (no LLM call)")
    what.add_argument("--morning-summary", action="store_true", help="the morning summary")
    add.add_argument("--name", default="", help="a short name")
    add.add_argument("--channel", help="where results go (default: the user's preferred)")
    for action in ("remove", "pause", "resume", "run-now"):
        actions.add_parser(action, help=f"{action.replace('-', ' ')} a task").add_argument(
            "id", help="the task id (see `valet tasks list`)")


async def run_tasks(settings: Settings, args: argparse.Namespace,
                    say: Callable[[str], None] = print) -> int:
    from bot.app import App
    from bot.cli.admin import _NoLLM

    app = await App.build(settings, llm=_NoLLM() if not settings.llm.configured else None)
    try:
        return await _run(app, args, say)
    except TaskError as err:
        say(f"valet tasks: {err}")
        return 1
    finally:
        await app.close()


async def _run(app: Any, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    service, engine = app.triggers.service, app.triggers.engine
    now = app.clock.now()
    if args.action == "list":
        user = await _user(app, args.user) if args.user else None
        tasks = await (engine.store.of_user(user.id, include_finished=True) if user
                       else engine.store.all())
        say(table(("ID", "USER", "NAME", "SCHEDULE", "NEXT RUN (the person's time)",
                   "STATUS"), [_row(task) for task in tasks]) if tasks else "no tasks")
        return 0
    if args.action == "add":
        user = await _user(app, args.user)
        owner = Owner(user.id, user.timezone, created_from="cli")
        if args.morning_summary:
            task = await service.morning_summary(owner, args.schedule, args.channel)
        elif args.remind:
            task = await service.schedule(owner, name=args.name or f"Reminder: {args.remind}",
                                          schedule=args.schedule, executor="reminder",
                                          action={"text": args.remind}, channel=args.channel)
        else:
            task = await service.schedule(owner, name=args.name, schedule=args.schedule,
                                          instruction=args.instruction, channel=args.channel)
        say(f"added {task_line(task, now)} ({task.timezone} time)")
        return 0
    task = await engine.store.get(args.id)
    if task is None:
        raise TaskError(f"no task {args.id!r} (see `valet tasks list`)")
    if args.action == "remove":
        await service.delete(task.user_id, task.id)
    elif args.action == "pause":
        await service.pause(task.user_id, task.id)
    elif args.action == "resume":
        await service.resume(task.user_id, task.id)
    else:
        return await _run_now(app, task, say)
    say(f"{_DONE[args.action]} {task.id}: {task.name}")
    return 0


def _row(task: Task) -> tuple[str, ...]:
    nxt = "-"
    if task.next_run_at is not None and task.status is TaskStatus.ACTIVE:
        local = task.next_run_at.astimezone(ZoneInfo(task.timezone))
        nxt = f"{local:%a %Y-%m-%d %H:%M} {task.timezone}"
    return (task.id, task.user_id, task.name, schedule_in_words(task), nxt,
            task.status.value)


RUN_NOW_WAIT = 30.0  # seconds for the scheduler's answer, then for the run's message


async def _run_now(app: Any, task: Any, say: Callable[[str], None]) -> int:
    """The running server runs it at once (with Redis the leading scheduler, wherever it is;
    without it the `valet serve` on this machine, through its loopback endpoint), and this
    says what became of the run's message once it is known: sent, queued, failed, nothing to
    send, or still being answered. With no server running, this command runs it and says
    that what it queued waits for one."""
    from bot.app.terminal import ask_running_server
    from bot.work.control import RedisSignals

    signals = app.plane.signals if app.plane is not None else None
    if isinstance(signals, RedisSignals):
        answer = await signals.ask("run_now", RUN_NOW_WAIT, task=task.id)
        if answer is None:
            say(f"valet tasks: no scheduler answered within {RUN_NOW_WAIT:.0f}s; is a "
                "`valet serve --role scheduler` (or `all`) running?")
            return 1
        return await _said(app, task, answer.get("outcome"), " (by the scheduler)", say)
    answered = await ask_running_server(app.settings.data_dir(), task.id)
    if answered is not None:
        return await _said(app, task, answered or None, " (by the running valet serve)", say)
    outcome = await app.triggers.engine.run_now(task.id)
    return await _said(app, task, outcome.value if outcome else None, None, say)


async def _said(app: Any, task: Any, outcome: str | None, by: str | None,
                say: Callable[[str], None]) -> int:
    """One line: what became of the run's message (`by`: who ran it; None: nobody serves,
    so nothing is sent yet)."""
    from triggers.run_fate import MessageState, message_fate, settle_submitted

    if outcome is None:
        say(f"ran {task.id}: already ran this second")
        return 0
    latest = await app.triggers.engine.store.latest_run(task.id)
    if outcome not in (RunOutcome.SENT.value, RunOutcome.SUBMITTED.value) or latest is None:
        say(f"ran {task.id}: {outcome.replace('_', ' ')}{by or ''}")
        return 1 if outcome == RunOutcome.FAILED.value else 0
    fate = await message_fate(app.db, task.id, latest["run_key"])
    deadline = asyncio.get_running_loop().time() + (RUN_NOW_WAIT if by else 0)
    while fate.state in (MessageState.WAITING, MessageState.QUEUED) and \
            asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)  # the server answers and delivers: the stores say when
        fate = await message_fate(app.db, task.id, latest["run_key"])
    await settle_submitted(app.db, task.id)  # the run's record says so too, from now on
    words = {MessageState.SENT: "sent",
             MessageState.QUEUED: "queued, not sent yet",
             MessageState.WAITING: "handed to the person's queue, not answered yet",
             MessageState.FAILED: f"failed: {fate.detail}",
             MessageState.NONE: f"nothing sent: {fate.detail or 'nothing to say'}"}
    if by is None and fate.state in (MessageState.QUEUED, MessageState.WAITING):
        said = "queued" if fate.state is MessageState.QUEUED else "queued as a turn"
        say(f"ran {task.id}: {said}; no valet serve is running here: it goes when one starts")
        return 0
    say(f"ran {task.id}: {words[fate.state]}{by or ''}")
    return 1 if fate.state is MessageState.FAILED else 0


_DONE = {"remove": "removed", "pause": "paused", "resume": "resumed"}


async def _user(app: Any, ref: str) -> Any:
    if ":" in ref:
        channel, address = ref.split(":", 1)
        user = await app.identities.resolve(channel, address)
    else:
        user = await app.users.get(ref)
    if user is None:
        raise TaskError(f"no such user: {ref}")
    return user

