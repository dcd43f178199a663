"""The turn's types: what a turn knows, what its steps return, and what it ends as.

    TurnContext   what the turn knows before anything runs (read, never written, by steps)
    Step          one thing done before the loop (pending approvals, waiting tasks, the plan,
                  memory recall...): it returns a value, it does not change the context
    Continue      the loop runs, with what the step adds: late results, notices, prompts,
                  system-context lines
    Answered      the turn ends with this reply, without the loop
    ComposedTurn  what is stored and said, built in one place (bot.turn.compose)

`TurnStop` (how a turn ended) lives in bot.contracts.envelopes because it travels to the channels
with the reply.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bot.contracts.approvals import ApprovalDraft, ApprovalRequest
from bot.contracts.envelopes import Inbound, TurnStop
from bot.contracts.people import User
from bot.contracts.steering import Steering
from bot.contracts.tool_context import ToolExecutionContext

Message = dict[str, Any]


@dataclass(frozen=True)
class TurnContext:
    msg: Inbound
    user: User
    turn_id: str
    system: str  # the persona's prompt with time, zone and capabilities
    history: list[Message]  # the stored conversation before this turn
    tool_ctx: ToolExecutionContext
    # Set by /stop (or Ctrl-C on the console): running calls are cancelled, the turn ends.
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    # Messages the person sends while this turn runs (bot.loop.steering); None: none can join.
    steering: Steering | None = None
    summary: str = ""  # the running summary of older messages (bot.memory.compaction)


@dataclass(frozen=True)
class Joined:
    """A result that arrives after its call's turn ended (a finished task, a decided
    approval): it joins this turn as a fresh call with its one result, so every call in the
    history keeps exactly one result."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    content: str

    def messages(self) -> list[Message]:
        call = {"role": "assistant", "content": None, "tool_calls": [{
            "id": self.call_id, "type": "function", "function": {
                "name": self.name, "arguments": json.dumps(self.arguments,
                                                           ensure_ascii=False)}}]}
        return [call, {"role": "tool", "tool_call_id": self.call_id, "content": self.content}]


@dataclass(frozen=True)
class StepAdditions:
    """What a step adds to the turn, whether the loop then runs (Continue) or not (Answered)."""

    joined: tuple[Joined, ...] = ()
    # Said to the person before the reply, and stored before their message (where it was
    # said): "I stopped waiting for your answer about the note".
    notices: tuple[str, ...] = ()
    prompts: tuple[ApprovalRequest, ...] = ()  # requests to show with the reply (edited ones)
    drafts: tuple[ApprovalDraft, ...] = ()  # approvals to open when the turn is written
    context: tuple[str, ...] = ()  # lines for the system prompt (this turn only)
    settled: tuple[str, ...] = ()  # approval ids whose outcome this turn reports
    # Said after the reply, and stored after it: "Still waiting for your OK: …".
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Continue(StepAdditions):
    """The loop runs; this step adds to the turn."""


@dataclass(frozen=True)
class Answered(StepAdditions):
    """The turn ends with this reply, without the loop (whatever was added still counts)."""

    text: str = ""
    stop: TurnStop = TurnStop.COMMAND


StepResult = Continue | Answered


class Step(Protocol):
    name: str

    @property
    def reads(self) -> str | None:
        """The part of the person's stores the step reads (a holding of bot.db.turn_reads:
        "approvals", "tasks", "memory", "plan"): when the turn knows they hold nothing there,
        the step has nothing to do with a text and is not run (a button press names what it
        answers, a request long decided included: it always reaches the steps). None: it runs
        on every message."""
        ...

    async def before(self, ctx: TurnContext) -> StepResult: ...


def merge(a: StepResult, b: StepResult) -> StepResult:
    """Two steps' additions together; an Answered stays an Answered."""
    return replace(  # keeps b's class, and an Answered's text and stop
        b, joined=a.joined + b.joined, notices=a.notices + b.notices,
        prompts=a.prompts + b.prompts, drafts=a.drafts + b.drafts,
        context=a.context + b.context, settled=a.settled + b.settled,
        after=a.after + b.after)


@dataclass(frozen=True)
class ComposedTurn:
    """The one value a turn ends as: what is stored, what the person reads."""

    stored: list[Message]  # this turn's messages for the history, in order
    text: str  # the reply's text
    prompts: tuple[ApprovalRequest, ...]
    stop: TurnStop
    settled: tuple[str, ...] = ()
