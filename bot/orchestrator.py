"""handle_message: prepare the context, decide whether to process, run the loop, and write
the turn down once. The orchestrator does not know whether a person or a trigger spoke."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.approvals.flow import ApprovalFlow
from bot.approvals.model import ApprovalDraft, ApprovalRequest
from bot.clock import Clock
from bot.context import ContextManager
from bot.envelopes import EventSink, Inbound, LoopEvent, Reply, TurnStop
from bot.gateway.ratelimit import SlidingWindowLimiter
from bot.gateway.users import User, UserStore
from bot.journal import TurnJournal
from bot.llm import LLM, LLMError, LLMMalformedResponseError
from bot.loop import (
    FallbackLines,
    LoopDeps,
    ReactLoopConfig,
    ReactLoopResult,
    react_loop,
)
from bot.memory.history import HistoryStore
from bot.tasks.model import PausedTask
from bot.tasks.resume import Answered, Resumer
from bot.telemetry import TranscriptWriter, turn_record
from bot.tools import ToolExecutionContext, ToolRegistry
from persona import Persona

log = logging.getLogger(__name__)
Message = dict[str, Any]


@dataclass
class TurnContext:
    msg: Inbound
    user: User
    turn_id: str
    system: list[Message]
    history: list[Message]  # stored history followed by this turn's incoming message
    incoming: list[Message]
    tool_ctx: ToolExecutionContext
    notices: list[str] = field(default_factory=list)  # said before the reply (bot.tasks.resume)
    # Approvals to show at the end of the turn (drafts from a resumed task, edited requests).
    drafts: list[Any] = field(default_factory=list)
    # Approvals whose outcome joined this turn: marked reported once the turn is written.
    settled: list[str] = field(default_factory=list)


@dataclass
class OrchestratorDeps:
    llm: LLM
    registry: ToolRegistry
    history: HistoryStore
    users: UserStore
    persona: Persona
    clock: Clock
    loop_config: ReactLoopConfig = field(default_factory=ReactLoopConfig)
    limiter: SlidingWindowLimiter | None = None
    transcripts: TranscriptWriter = field(default_factory=lambda: TranscriptWriter(None))
    tool_services: dict[str, Any] = field(default_factory=dict)
    tool_stores: Any = None
    http: Any = None
    resume: Resumer | None = None  # waiting tasks get the message first (step 1)
    approvals: ApprovalFlow | None = None  # pending approvals get it before them
    # Extra system context per user (waiting tasks, the plan): a line, or None.
    context_notes: list[Callable[[str], Awaitable[str | None]]] = field(default_factory=list)
    journal: TurnJournal | None = None  # a redone turn continues from it (bot.journal)


class Orchestrator:
    def __init__(self, deps: OrchestratorDeps) -> None:
        self.deps = deps
        self.context = ContextManager(deps.loop_config)
        self.loop_deps = LoopDeps(deps.llm, deps.registry, self.context, deps.clock,
                                  gate=deps.approvals.gate if deps.approvals else None,
                                  journal=deps.journal)
        lines = deps.persona.lines
        self.fallback = FallbackLines(too_long=lines.too_long, deadline=lines.deadline,
                                      no_answer=lines.no_answer, cancelled=lines.cancelled)

    async def handle_message(self, msg: Inbound, *, emit: EventSink | None = None) -> Reply:
        ctx = await self.prepare_context(msg)
        rejection = self.should_process(ctx)
        if rejection is not None:
            return rejection
        direct = await self._before_loop(ctx)
        if direct is not None:
            approvals = await self._open_approvals(ctx)
            stored = self._with_prompt(direct.text, approvals, listed=True)
            await self._persist(ctx, [{"role": "assistant", "content": stored}])
            return self._reply(ctx, self._with_prompt(direct.text, approvals),
                               approvals=approvals, stop=direct.stop)
        await self._add_context_notes(ctx)
        try:
            result = await react_loop(self.loop_deps, ctx.system, ctx.history, ctx.tool_ctx,
                                      self.deps.loop_config, emit=emit, fallback=self.fallback,
                                      turn_id=ctx.turn_id)
        except LLMError as err:
            log.error("turn %s for %s failed: %s: %s", ctx.turn_id, ctx.user.id,
                      type(err).__name__, err)
            # The message stays in the history so the next turn sees it.
            await self._persist(ctx, [])
            lines = self.deps.persona.lines
            said = lines.llm_malformed if isinstance(err, LLMMalformedResponseError) \
                else lines.llm_unavailable
            return self._reply(ctx, said, stop=TurnStop.LLM_ERROR)
        resume = self.deps.resume
        text = await resume.after_loop(ctx, result) if resume is not None else result.response
        approvals = await self._open_approvals(ctx, result)
        if approvals:
            asked = any(isinstance(p.pause, PausedTask) for p in result.pauses)
            text = text if asked else ""
            stored = {"role": "assistant",
                      "content": self._with_prompt(text, approvals, listed=True)}
            if asked:
                result.new_messages[-1] = stored
            else:
                result.new_messages.append(stored)
            text = self._with_prompt(text, approvals)
        await self.post_process(ctx, result)
        return self._reply(ctx, text, approvals=approvals,
                           stop=result.stop_reason)

    async def _before_loop(self, ctx: TurnContext) -> Answered | None:
        """Step 1: pending approvals, then waiting tasks, get the message first."""
        if self.deps.approvals is not None:
            direct = await self.deps.approvals.before_loop(ctx)
            if direct is not None:
                return direct
        if self.deps.resume is not None:
            return await self.deps.resume.before_loop(ctx)
        return None

    async def _open_approvals(self, ctx: TurnContext, result: ReactLoopResult | None = None
                              ) -> list[ApprovalRequest]:
        """The approvals this turn asks for, durable before the reply goes out."""
        flow = self.deps.approvals
        drafts = [d for d in ctx.drafts if isinstance(d, ApprovalDraft)]
        if result is not None:
            drafts += [p.pause for p in result.pauses if isinstance(p.pause, ApprovalDraft)]
        shown = [d for d in ctx.drafts if isinstance(d, ApprovalRequest)]
        if flow is None or not (drafts or shown):
            return []
        return shown + await flow.open(ctx, drafts)

    def _with_prompt(self, text: str, approvals: list[ApprovalRequest], *,
                     listed: bool = False) -> str:
        """The reply's text when approvals wait: the intro (each channel renders the requests
        its own way: buttons, numbered lines); `listed` for the history, which the LLM reads."""
        if not approvals or self.deps.approvals is None:
            return text
        prompt = self.deps.approvals.prompt_text(approvals, listed=listed)
        return "\n\n".join(t for t in (text, prompt) if t)

    def _reply(self, ctx: TurnContext, text: str, *,
               approvals: list[ApprovalRequest] | None = None, stop: TurnStop) -> Reply:
        prompts = tuple(a.prompt(i) for i, a in enumerate(approvals or [], 1))
        return Reply("\n\n".join([*ctx.notices, text]), prompts=prompts, stop=stop,
                     turn_id=ctx.turn_id)

    async def _add_context_notes(self, ctx: TurnContext) -> None:
        notes = [note for provider in self.deps.context_notes
                 if (note := await provider(ctx.user.id))]
        if notes:
            first = ctx.system[0]
            ctx.system = [{**first, "content": "\n\n".join([first["content"], *notes])},
                          *ctx.system[1:]]

    async def stream_message(self, msg: Inbound) -> AsyncIterator[LoopEvent | Reply]:
        """The same run as `handle_message`, as events, ending with the Reply."""
        queue: asyncio.Queue[LoopEvent | Reply | BaseException] = asyncio.Queue()

        async def emit(event: LoopEvent) -> None:
            queue.put_nowait(event)

        async def run() -> None:
            try:
                queue.put_nowait(await self.handle_message(msg, emit=emit))
            except BaseException as err:  # handed to the consumer, re-raised there
                queue.put_nowait(err)

        task = asyncio.create_task(run())
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, Reply):
                    return
        finally:
            if not task.done():
                task.cancel()

    async def prepare_context(self, msg: Inbound) -> TurnContext:
        deps = self.deps
        user = await deps.users.get(msg.user_id)
        if user is None:
            raise LookupError(f"unknown user {msg.user_id!r}: the gateway admits users first")
        tool_ctx = ToolExecutionContext(
            user_id=user.id, timezone=user.timezone, clock=deps.clock, http=deps.http,
            stores=deps.tool_stores, channel=msg.channel, services=deps.tool_services)
        system = [{"role": "system", "content": deps.persona.system_prompt(
            channel=msg.channel, now=tool_ctx.now(), timezone=user.timezone,
            capabilities=self.capabilities())}]
        incoming = [{"role": "user", "content": msg.text}]
        history = await deps.history.load(user.id)
        return TurnContext(msg, user, msg.turn_id or uuid.uuid4().hex, system,
                           history + incoming, incoming, tool_ctx)

    def should_process(self, ctx: TurnContext) -> Reply | None:
        if ctx.user.blocked:
            return Reply("", silent=True, stop=TurnStop.BLOCKED)
        limiter = self.deps.limiter
        if limiter is not None and not limiter.allow(ctx.user.id):
            return Reply(self.deps.persona.lines.rate_limited, stop=TurnStop.RATE_LIMITED)
        return None

    async def post_process(self, ctx: TurnContext, result: ReactLoopResult) -> None:
        """Write the raw turn once: the user's message, tool calls, results, final answer."""
        await self._persist(ctx, result.new_messages)
        self.deps.transcripts.write(turn_record(
            ctx.turn_id, ctx.user.id, ctx.msg.channel, self.deps.clock.now(), result))

    async def _persist(self, ctx: TurnContext, produced: list[Message]) -> None:
        await self.deps.history.append(ctx.user.id, ctx.turn_id, ctx.incoming + produced,
                                       channel=ctx.msg.channel, at=self.deps.clock.now())
        if self.deps.journal is not None:  # the turn is stored: nothing left to replay
            await self.deps.journal.finish(ctx.turn_id)
        if ctx.settled and self.deps.approvals is not None:
            # Only now: a turn cut short before this point flows the outcomes back again.
            await self.deps.approvals.store.mark_reported(ctx.settled)

    def capabilities(self) -> list[str]:
        return [f"{t.name} ({_first_sentence(t.description)})" for t in self.deps.registry]


def _first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].strip().rstrip(".")
    return head[:120]
