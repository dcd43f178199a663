"""How much lasting work a person may set up: tasks active at once, and how often a task that
asks the LLM may run. Checked whenever a task is created, rescheduled or resumed, whoever asks
(the LLM's tools, /tasks, the CLI), so no way in skips it. Going over is one sentence back to
the person (a TaskError the model repeats) and one notice to the owner a day per person and
limit; nothing is dropped silently.

Plain reminders need no LLM call, so only the count limits them; event bursts are bounded
where events are taken in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

from bot.people.users import UserStore
from persona.lines import ScheduleLines, fill
from persona.spoken import spoken_number
from triggers.model import Task, TaskStatus, TriggerKind
from triggers.store import TaskStore

# What counts as set up: a task that will run again.
ACTIVE = (TaskStatus.ACTIVE, TaskStatus.PENDING_APPROVAL)
NO_LLM = ("reminder",)  # executors that send a fixed text
OCCURRENCES_CHECKED = 200  # a cron line's shortest gap, from its next occurrences


@dataclass(frozen=True)
class TaskLimit:
    max_active: int = 0  # tasks set up at once; 0: no limit
    min_interval: timedelta = timedelta(0)  # between two runs that ask the LLM; 0: none


@dataclass(frozen=True)
class TaskLimits:
    others: TaskLimit = TaskLimit(max_active=20, min_interval=timedelta(minutes=15))
    owner: TaskLimit = TaskLimit()  # the owner decides for everyone, themselves included


class OverTaskLimit(ValueError):
    """A task past a limit; the message is the sentence for the person."""


# (text, dedupe key); text as a function: composed for each owner in their language.
TellOwner = Callable[[str | Callable[[], str], str], Awaitable[object]]


class TaskLimitCheck:
    def __init__(self, limits: TaskLimits, users: UserStore, store: TaskStore,
                 tell_owner: TellOwner | None, lines: ScheduleLines) -> None:
        """`lines`: the persona's, said in the listener's language (the person over their
        limits hears the reason in theirs; the owner's notice is composed in the owner's)."""
        self.limits = limits
        self.users = users
        self.store = store
        self.tell_owner = tell_owner
        self.lines = lines

    async def admit(self, task: Task, now: datetime, *, replacing: str | None = None) -> None:
        """OverTaskLimit when `task` (new, or the changed or resumed `replacing`) goes past the
        person's limits."""
        user = await self.users.get(task.user_id)
        limit = self.limits.owner if user is None or user.is_owner else self.limits.others
        over = await self._over(task, limit, now, replacing)
        if over is None:
            return
        kind, line, values = over

        def reason() -> str:
            return fill(getattr(self.lines, line),  # numbers as the reader writes them
                        **{key: spoken_number(value) for key, value in values.items()})

        if self.tell_owner is not None and user is not None and not user.is_owner:
            name = user.display_name or user.id
            await self.tell_owner(
                lambda: fill(self.lines.budget_exceeded, name=name, reason=reason()),
                f"limit:{user.id}:{kind}:{now:%Y-%m-%d}")
        raise OverTaskLimit(reason())

    async def _over(self, task: Task, limit: TaskLimit, now: datetime,
                    replacing: str | None) -> tuple[str, str, dict[str, float]] | None:
        """Which limit `task` goes past: (its kind, the line saying why, its values)."""
        if limit.max_active:
            active = [t for t in await self.store.of_user(task.user_id)
                      if t.status in ACTIVE and t.id != replacing]
            if len(active) >= limit.max_active:
                return "too many tasks", "budget_too_many_tasks", {
                    "active": len(active), "limit": limit.max_active}
        if limit.min_interval and task.executor not in NO_LLM:
            gap = shortest_gap(task, now)
            if gap is not None and gap < limit.min_interval:
                return "too often", "budget_too_often", {
                    "minutes": limit.min_interval.total_seconds() / 60,
                    "every": gap.total_seconds() / 60}
        return None


def shortest_gap(task: Task, now: datetime) -> timedelta | None:
    """The shortest time between two runs of the task that ask the LLM; None when it does
    not repeat on a schedule (once, or on events). A condition's check (a read-only tool) runs
    at its interval, its turn at most once per cooldown."""
    if task.kind is TriggerKind.CONDITION and task.condition is not None:
        return timedelta(seconds=max(task.interval_seconds or 0,
                                     task.condition.cooldown_seconds))
    if task.kind is TriggerKind.INTERVAL and task.interval_seconds:
        return timedelta(seconds=task.interval_seconds)
    if task.kind is not TriggerKind.CRON:
        return None
    times: list[datetime] = []
    at: datetime | None = now
    while at is not None and len(times) < OCCURRENCES_CHECKED:
        at = task.next_after(at)
        if at is not None:
            times.append(at)
    gaps = [b - a for a, b in pairwise(times)]
    return min(gaps) if gaps else None
