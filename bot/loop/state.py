"""What one run of the ReAct loop works with: its dependencies (shared by every run, never
written) and its state (`LoopRun`: one per run, never shared between runs or users)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bot.config.policies import ReactLoopConfig
from bot.contracts.clock import Clock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import LLM, TokenUsage, ToolCall
from bot.loop.context import ContextManager
from bot.loop.fallback import ModelSlot
from bot.loop.journal import TurnJournal, TurnRecorder
from bot.loop.types import ToolCallRecord
from bot.tools.registry import Tool, ToolOutcome, ToolRegistry

if TYPE_CHECKING:
    from bot.contracts.steering import Steering

Message = dict[str, Any]

# Decides, before a call runs, that it must not run now (approval needed): returns its outcome.
CallGate = Callable[[ToolCall, Tool, ToolExecutionContext], Awaitable[ToolOutcome | None]]


class ToolChoice(Protocol):
    """Which tools a request carries, from the conversation so far (bot.tools.capabilities)."""

    async def schemas(self, messages: list[Message]) -> list[dict[str, Any]]: ...

    def refusal(self, tool_name: str, messages: list[Message]) -> str | None: ...

    def offers_untrusted(self, messages: list[Message]) -> bool: ...


@dataclass
class LoopDeps:
    llm: LLM
    registry: ToolRegistry
    context: ContextManager
    clock: Clock
    gate: CallGate | None = None
    journal: TurnJournal | None = None  # None: nothing recorded, nothing replayed
    tool_choice: ToolChoice | None = None  # None: every tool, every request
    provider: str = ""  # whose tool-message format `llm` reads and writes (bot.loop.fallback)
    fallbacks: tuple[ModelSlot, ...] = ()  # tried in order when the model keeps failing

    @property
    def models(self) -> tuple[ModelSlot, ...]:
        return (ModelSlot(self.llm, self.provider), *self.fallbacks)

    async def tool_schemas(self, messages: list[Message]) -> list[dict[str, Any]]:
        if self.tool_choice is None:
            return self.registry.schemas()
        return await self.tool_choice.schemas(messages)

    def kept_tools(self) -> list[dict[str, Any]] | None:
        """The tools the conversation was offered so far, if its tool choice keeps them
        (bot.tools.offer): what a turn without tools offers all the same."""
        kept = getattr(self.tool_choice, "kept_schemas", None)
        return kept() if kept is not None else None

    def offers_untrusted(self, messages: list[Message]) -> bool:
        """Whether a request made now offers tools whose names, descriptions and schemas a
        third party wrote (an MCP server the operator did not mark trusted)."""
        if self.tool_choice is not None:
            return self.tool_choice.offers_untrusted(messages)
        return any(not source.trusted and source.known() for source in self.registry.sources)


@dataclass
class LoopRun:
    """The state of one loop run."""

    cfg: ReactLoopConfig
    clock: Clock
    deadline: float  # on the clock's monotonic reading
    messages: list[Message]  # raw history + this turn, sent through the ContextManager
    journal: TurnRecorder = field(default_factory=TurnRecorder)
    new: list[Message] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    records: list[ToolCallRecord] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    level: int = 0
    turns: int = 0
    llm_step: int = 0  # LLM calls so far: the journal's key for each response
    repeat_tripped: bool = False
    trace: list[dict[str, Any]] = field(default_factory=list)  # bot.loop.traces entries, in order
    mode: str = "react"  # "simple": no tool schemas are offered (bot.turn.modes)
    model: int = 0  # which of LoopDeps.models answers: a switch lasts for the rest of the run
    summary: str = ""  # the conversation's running summary, carried in every view
    steering: Steering | None = None  # messages the person adds while the turn runs
    token_budget: int = 0  # tokens the run may spend (0: no limit but its steps)
    sub_requests: int = 0  # LLM calls its sub-tasks made (bot.loop.subtasks)
    asked_again: int = 0  # requests beyond one per answer (an empty answer asked again)

    def append(self, msg: Message) -> None:
        self.messages.append(msg)
        self.new.append(msg)

    def remaining(self) -> float:
        return self.deadline - self.clock.monotonic()
