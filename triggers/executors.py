"""Executors: what a run does. The orchestrator executor puts a trigger message in the
person's queue (the LLM decides what to do; the reply goes out as a notification); a
deterministic executor does a fixed thing with no LLM call (a reminder sends its text)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from bot.contracts.envelopes import Delivery, Notification, TriggerMessage, Urgency
from bot.text.untrusted import quote_untrusted
from persona.lines import ScheduleLines, fill
from persona.speaking import speaking_to
from triggers.model import RunKey, RunOutcome, Task, TriggerKind
from triggers.templates import instruction_for

MAX_EVENT_CHARS = 2000  # an event's data is quoted into the turn, bounded


LanguageOf = Callable[[str], Awaitable[str | None]]  # a person's language (bot.people.users)


class TriggerGateway(Protocol):
    """The part of the gateway a run needs (bot.gateway.gateway.Gateway fits)."""

    async def submit(self, msg: TriggerMessage) -> bool: ...

    async def notify(self, note: Notification) -> Delivery: ...


@dataclass(frozen=True)
class RunContext:
    """One run: its task, its unique key, when it was due, and what set it off."""

    task: Task
    run_key: str
    scheduled_at: datetime
    events: tuple[Mapping[str, Any], ...] = ()  # what set it off: source, type, data each
    observed: Any = None  # a condition's value when it became true
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def message_key(self) -> str:
        """The key the gateway dedupes the run's message on."""
        return str(RunKey(self.task.id, self.run_key))


class Executor(Protocol):
    async def execute(self, run: RunContext) -> RunOutcome: ...


def trigger_text(run: RunContext, tools: Collection[str] = ()) -> str:
    """What the turn is asked, marked so the persona knows no person wrote it."""
    task = run.task
    instruction = instruction_for(task.template, task.instruction, tools)
    if task.kind is TriggerKind.EVENT and run.events:
        first = run.events[0]
        source, kind = first.get("source"), first.get("type")
        # Whoever posted the events wrote their data: the model reads it as data, and a turn
        # that holds it asks before changing how Valet reaches the person (bot.text.untrusted).
        quoted = quote_untrusted(events_text(run.events),
                                 note=f"the event's data, as {source} sent it")
        count = len(run.events)
        what = f"{source}/{kind}" + (f" ({count} events)" if count > 1 else "")
        return f"[Event Trigger] {what}:\n{quoted}\nTask: {instruction}"
    if task.kind is TriggerKind.CONDITION and task.condition is not None:
        check = task.condition
        return (f"[Condition Trigger] Condition met: {check.tool} {check.op} "
                f"{check.value!r} (observed {run.observed!r})\nTask: {instruction}")
    return f"[Scheduled Task] {instruction}"


def events_text(events: Sequence[Mapping[str, Any]]) -> str:
    """Each event's data as one JSON line, as many whole lines as fit MAX_EVENT_CHARS, then
    how many more there were (never a line cut in two)."""
    lines: list[str] = []
    size = 0
    for event in events:
        line = json.dumps(dict(event.get("data") or {}), default=str)
        if lines and size + len(line) + 1 > MAX_EVENT_CHARS:
            break
        lines.append(line[:MAX_EVENT_CHARS])
        size += len(line) + 1
    if len(lines) < len(events):
        lines.append(f"(and {len(events) - len(lines)} more events like these)")
    return "\n".join(lines)


def urgency_of(task: Task) -> Urgency:
    try:
        return Urgency(str(task.action.get("urgency", "normal")))
    except ValueError:
        return Urgency.NORMAL


class OrchestratorExecutor:
    """The default: the run becomes a turn in the person's queue."""

    def __init__(self, gateway: TriggerGateway, tools: Collection[str] = ()) -> None:
        self.gateway = gateway
        self.tools = tools  # the tool names this deployment has (templates ask only for them)

    async def execute(self, run: RunContext) -> RunOutcome:
        await self.gateway.submit(TriggerMessage(
            run.task.user_id, trigger_text(run, self.tools), key=run.message_key,
            task_id=run.task.id, channel=run.task.channel,
            origin_channel=run.task.origin_channel, urgency=urgency_of(run.task)))
        return RunOutcome.SUBMITTED  # a duplicate submit is a no-op: still submitted once


class ReminderExecutor:
    """A plain reminder: its text, sent as a notification. No LLM call."""

    def __init__(self, gateway: TriggerGateway, lines: ScheduleLines,
                 language_of: LanguageOf | None = None) -> None:
        self.gateway = gateway
        self.lines = lines
        self.language_of = language_of  # the person's language (None: the persona's)

    async def execute(self, run: RunContext) -> RunOutcome:
        text = str(run.task.action.get("text") or run.task.name)
        language = await self.language_of(run.task.user_id) if self.language_of else None
        with speaking_to(language):
            said = fill(self.lines.reminder, text=text)
        delivery = await self.gateway.notify(Notification(
            run.task.user_id, said, dedupe_key=run.message_key,
            channel=run.task.channel, fallback_channel=run.task.origin_channel,
            urgency=urgency_of(run.task)))
        # ALREADY_QUEUED is a redone run whose message went before: sent, once.
        return RunOutcome.UNREACHABLE if delivery is Delivery.UNREACHABLE else RunOutcome.SENT


class ExecutorRegistry:
    """Executors by name; a task names one (`orchestrator` by default)."""

    def __init__(self, executors: Mapping[str, Executor] | None = None) -> None:
        self._executors: dict[str, Executor] = dict(executors or {})

    def register(self, name: str, executor: Executor) -> None:
        self._executors[name] = executor

    def get(self, name: str) -> Executor | None:
        return self._executors.get(name)

    def names(self) -> list[str]:
        return sorted(self._executors)


EXECUTORS = ("orchestrator", "reminder")  # what default_executors registers, by name


def default_executors(gateway: TriggerGateway, tools: Collection[str] = (), *,
                      lines: ScheduleLines, language_of: LanguageOf | None = None
                      ) -> ExecutorRegistry:
    return ExecutorRegistry({"orchestrator": OrchestratorExecutor(gateway, tools),
                             "reminder": ReminderExecutor(gateway, lines, language_of)})
