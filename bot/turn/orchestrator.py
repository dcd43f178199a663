"""handle_message: a turn as a pipeline of values.

    prepare_context -> should_process -> steps (each returns a value) -> the loop
    -> open_waits (tasks paused, approvals opened: durable before the reply)
    -> compose_turn (the one place the stored turn is built) -> post_process (write once)

The orchestrator does not know whether a person or a trigger spoke, nor which channel will
render the reply.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from typing import Any

from bot.capabilities import OPEN_TOOL
from bot.capability_router import NOTHING, RoutedTools, settle
from bot.contracts.allowance import TurnAllowance
from bot.contracts.approvals import ApprovalDraft
from bot.contracts.envelopes import EventSink, Inbound, LoopEvent, Reply, TurnStop
from bot.contracts.pause import PausedTask, each_pause
from bot.contracts.people import User
from bot.contracts.steering import Steering
from bot.contracts.tool_context import ToolExecutionContext
from bot.contracts.turn import (
    Answered,
    ComposedTurn,
    Continue,
    StepResult,
    TurnContext,
    merge,
)
from bot.db import Queries
from bot.db.turn_reads import may_hold
from bot.llm.port import (
    LLMError,
    LLMMalformedResponseError,
    is_misconfiguration,
    misconfiguration_hint,
)
from bot.loop.context import ContextManager
from bot.loop.react import FallbackLines, LoopDeps, ReactLoopResult, react_loop
from bot.loop.subtasks import short_changed
from bot.loop.types import REACT, SIMPLE
from bot.memory.summaries import HOLDING as SUMMARY
from bot.meter.llm import AllowanceSpent
from bot.plumbing import logs
from bot.text.untrusted import OPENING as UNTRUSTED_OPENING
from bot.tool_offer import StableOffers
from bot.turn.brief import made_brief, shortened_once
from bot.turn.compose import LLMFailure, Waits, compose_turn
from bot.turn.media import user_message, with_note
from bot.turn.modes import choose_mode
from bot.turn.orchestrator_deps import OrchestratorDeps
from bot.turn.telemetry import turn_record
from bot.turn.trace_store import turn_trace
from persona import time_line
from persona.speaking import speaking_to

log = logging.getLogger(__name__)


class Orchestrator:
    def __init__(self, deps: OrchestratorDeps) -> None:
        self.deps = deps
        self.context = ContextManager(deps.loop_config)
        self.loop_deps = LoopDeps(deps.llm, deps.registry, self.context, deps.clock,
                                  gate=deps.approvals.gate if deps.approvals else None,
                                  journal=deps.journal, tool_choice=deps.exposure,
                                  provider=deps.provider, fallbacks=deps.fallbacks)
        self.fallback: FallbackLines = deps.persona.lines
        self.offers = StableOffers()  # each conversation's tools, offered again (cache)

    async def handle_message(self, msg: Inbound, *, emit: EventSink | None = None,
                             cancel: asyncio.Event | None = None,
                             steering: Steering | None = None,
                             writes: Queries | None = None) -> Reply:
        """`writes`: where the stored turn goes (the gateway's batch: committed with the
        reply and the message's close, all or nothing); None: written before returning."""
        started = time.perf_counter()
        # Log lines of this turn carry its id, not the id of the request that woke its queue.
        ids = (logs.turn_id.set(msg.turn_id), logs.request_id.set(None))
        try:
            reply = await self._handle(msg, emit, cancel, steering, writes)
        except Exception:
            self.deps.metrics.turn_finished("error", time.perf_counter() - started)
            raise
        finally:
            logs.turn_id.reset(ids[0])
            logs.request_id.reset(ids[1])
        self.deps.metrics.turn_finished(reply.stop, time.perf_counter() - started)
        return reply

    async def _handle(self, msg: Inbound, emit: EventSink | None,
                      cancel: asyncio.Event | None, steering: Steering | None,
                      writes: Queries | None) -> Reply:
        ctx = await self.prepare_context(msg, cancel, steering)
        # Every line of the turn is in the person's language (persona.speaking).
        with speaking_to(ctx.user.language or self.deps.persona.language):
            return await self._serve(ctx, emit, writes)

    async def _serve(self, ctx: TurnContext, emit: EventSink | None,
                     writes: Queries | None) -> Reply:
        rejection = self.should_process(ctx)
        if rejection is not None:
            return rejection
        before = await self.run_steps(ctx)
        run = None if isinstance(before, Answered) else await self.run_loop(ctx, before, emit)
        run = await self.made_brief(ctx, run)
        if isinstance(run, ReactLoopResult) and run.tool_calls:
            # sub-tasks the allowance stopped: said plainly
            before = merge(before, short_changed(run.tool_calls, ctx.tool_ctx.allowance,
                                                 self.deps.persona.lines))
        waits = await self.open_waits(ctx, before, run)
        lines = self.deps.persona.lines
        turn = compose_turn(ctx, before, run, waits, approval_intro=(
            lines.trigger_approval_intro if ctx.msg.from_trigger else lines.approval_intro))
        await self.post_process(ctx, turn, run, writes)
        if run is not None:
            await self._keep_trace(ctx, before, run, waits, turn, writes)
        small_talk = isinstance(run, ReactLoopResult) and run.mode == SIMPLE \
            and self.deps.loop_config.mode == "auto"  # a greeting, a thanks (bot.turn.modes)
        for hook in self.deps.after_turn:
            if hook.after_small_talk or not small_talk:
                hook.run(ctx, turn)
        return Reply(turn.text, prompts=tuple(a.prompt(i) for i, a in
                                              enumerate(turn.prompts, 1)),
                     stop=turn.stop, turn_id=ctx.turn_id)

    async def made_brief(self, ctx: TurnContext, run: ReactLoopResult | LLMFailure | None
                         ) -> ReactLoopResult | LLMFailure | None:
        """An answer fits what its channel calls brief (a triggered run's summary by SMS; a
        reply by SMS gets one shortening pass), in what is sent and what the history keeps
        alike; the shortening's tokens count as the turn's."""
        if not isinstance(run, ReactLoopResult) or not run.response:
            return run
        sender = self.deps.channels.get(ctx.msg.channel)
        brevity = sender.brevity(triggered=bool(ctx.msg.from_trigger)) \
            if sender is not None else None
        if brevity is None:
            return run
        shorten = made_brief if ctx.msg.from_trigger else shortened_once
        text = await shorten(run.response, brevity, self.deps.llm, spent=run.token_usage)
        if text == run.response:
            return run
        said = [{**m, "content": text} if m.get("role") == "assistant"
                and m.get("content") == run.response else m for m in run.new_messages]
        return replace(run, response=text, new_messages=said)

    def _allowance(self, user: User) -> TurnAllowance:
        """What this turn may spend on sub-tasks: their LLM requests are taken from the same
        limit as the person's messages (never the owner's: the owner is not limited)."""
        cfg, limiter = self.deps.loop_config, self.deps.limiter
        charge = partial(limiter.allow, user.id) \
            if limiter is not None and not user.is_owner else None
        return TurnAllowance(cfg.subtask_max_per_turn, cfg.subtask_concurrency, charge,
                             limiter.limit if limiter is not None else 0)

    async def prepare_context(self, msg: Inbound, cancel: asyncio.Event | None = None,
                              steering: Steering | None = None) -> TurnContext:
        deps = self.deps
        user = await deps.users.get(msg.user_id)
        if user is None:
            raise LookupError(f"unknown user {msg.user_id!r}: the gateway admits users first")
        turn_id = msg.turn_id or uuid.uuid4().hex
        tool_ctx = ToolExecutionContext(
            user_id=user.id, timezone=user.timezone, clock=deps.clock, http=deps.http,
            channel=msg.channel, services=deps.tool_services,
            triggered_by=msg.external_id if msg.from_trigger else None, turn_id=turn_id,
            allowance=self._allowance(user))
        system = deps.persona.system_prompt(
            channel=msg.channel, capabilities=self.capabilities(),
            opened_with=OPEN_TOOL if deps.exposure and deps.exposure.on else None,
            language=user.language)
        logs.turn_id.set(turn_id)
        summary = await deps.summaries.latest(user.id) \
            if deps.summaries and may_hold(user.id, SUMMARY.name) else None
        history = await deps.history.load(user.id,
                                          after_seq=summary.through_seq if summary else 0)
        return TurnContext(msg, user, turn_id, system, history, tool_ctx,
                           cancel or asyncio.Event(), steering=steering,
                           summary=summary.text if summary else "")

    def should_process(self, ctx: TurnContext) -> Reply | None:
        if ctx.user.blocked:
            return Reply("", silent=True, stop=TurnStop.BLOCKED)
        limiter = self.deps.limiter
        # The limit protects Valet from other people, not from its owner. A person's triggered
        # runs (their tasks, their events) count against it like their messages.
        if limiter is None or ctx.user.is_owner or limiter.allow(ctx.user.id):
            return None
        lines = self.deps.persona.lines
        # Told once a window ("slow down"), not once a message: by SMS each would cost.
        if ctx.msg.from_trigger is None:
            told = not limiter.allow(f"slow-down:{ctx.user.id}", limit=1)
            return Reply(lines.rate_limited, stop=TurnStop.RATE_LIMITED, silent=told)
        # A burst of held-back runs is told once a window, not once a run.
        told = not limiter.allow(f"told:{ctx.user.id}", limit=1)
        return Reply(lines.trigger_rate_limited, stop=TurnStop.RATE_LIMITED, silent=told)

    async def run_steps(self, ctx: TurnContext) -> StepResult:
        """Each step in order gets the turn; the first that answers ends the turn there."""
        outcome: StepResult = Continue()
        for step in self.deps.steps:
            if step.reads is not None and ctx.msg.button is None \
                    and not may_hold(ctx.user.id, step.reads):
                continue  # nothing waits there: a plain chat does only what it needs
            outcome = merge(outcome, await step.before(ctx))
            if isinstance(outcome, Answered):
                break
        return outcome

    async def run_loop(self, ctx: TurnContext, before: StepResult, emit: EventSink | None
                       ) -> ReactLoopResult | LLMFailure:
        system = ctx.system  # the same every turn: what changes goes with the newest message
        note = [time_line(ctx.tool_ctx.now(), ctx.user.timezone), *before.context]
        conversation = [*ctx.history, *_said_before(before),
                        with_note(user_message(ctx.msg), note),
                        *(m for late in before.joined for m in late.messages())]
        mode = choose_mode(self.deps.loop_config.mode, ctx, before, self.deps.persona.name)
        choice = self.routed(ctx, mode)
        deps = self.loop_deps if choice is None else replace(self.loop_deps, tool_choice=choice)
        # A step's context line may quote third-party text (a recalled fact learnt from a
        # page): the turn is tainted from its first call (the loop adds what it reads later).
        tool_ctx = ctx.tool_ctx if UNTRUSTED_OPENING not in system \
            else replace(ctx.tool_ctx, untrusted_context=True)
        try:
            result = await react_loop(deps, [{"role": "system", "content": system}],
                                      conversation, tool_ctx, self.deps.loop_config,
                                      emit=emit, fallback=self.fallback, cancel=ctx.cancel,
                                      turn_id=ctx.turn_id, mode=mode, summary=ctx.summary,
                                      steering=ctx.steering)
        except LLMError as err:
            log.error("turn %s for %s failed: %s: %s", ctx.turn_id, ctx.user.id,
                      type(err).__name__, err)
            return LLMFailure(self.line_for(err), f"{type(err).__name__}: {err}",
                              err.said_mid_turn, err.spent)
        if choice is not None and self.deps.router is not None \
                and (choice.route.named or result.tool_calls):  # else nothing to settle
            misses = settle(choice, ctx.history, result.new_messages, result.trace)
            self.deps.metrics.routed(choice.route.opened, misses)
        return result

    def routed(self, ctx: TurnContext, mode: str) -> RoutedTools | None:
        """This turn's tool choice, with what the router opened (a turn that starts without
        tool schemas needs none); None: every tool, every request."""
        exposure, router = self.deps.exposure, self.deps.router
        if exposure is None:
            return None
        route = router.route(ctx.msg.text, ctx.history) if router is not None \
            and mode == REACT else NOTHING
        triggered = ctx.msg.from_trigger is not None  # (its own tools: a set of its own)
        return RoutedTools(exposure, route, triggered=triggered,
                           kept=(self.offers, f"{ctx.user.id}:{triggered}",
                                 str(hash(ctx.summary))))

    def line_for(self, err: LLMError) -> str:
        """What the person reads when the LLM could not be used: what actually happened."""
        lines = self.deps.persona.lines
        if is_misconfiguration(err):
            log.error("Valet is misconfigured: %s", misconfiguration_hint(err))
            return lines.misconfigured
        if isinstance(err, LLMMalformedResponseError):
            return lines.llm_malformed
        if isinstance(err, AllowanceSpent):  # the meter stopped the turn before a call
            return lines.budget_reached
        return lines.llm_unavailable

    async def open_waits(self, ctx: TurnContext, before: StepResult,
                         run: ReactLoopResult | LLMFailure | None) -> Waits:
        """What this turn leaves waiting, made durable before the reply goes out."""
        pauses = [p for o in run.pauses for p in each_pause(o.pause)] \
            if isinstance(run, ReactLoopResult) else []
        tasks = [p for p in pauses if isinstance(p, PausedTask)]
        drafts = [*before.drafts, *(p for p in pauses if isinstance(p, ApprovalDraft))]
        notices = await self.deps.tasks.pause(ctx, tasks) if self.deps.tasks and tasks else []
        opened = await self.deps.approvals.open(ctx, drafts) \
            if self.deps.approvals and drafts else []
        return Waits(prompts=(*before.prompts, *opened),
                     questions=tuple(t.question for t in tasks), notices=tuple(notices))

    async def post_process(self, ctx: TurnContext, turn: ComposedTurn,
                           run: ReactLoopResult | LLMFailure | None,
                           writes: Queries | None = None) -> None:
        """Write the raw turn once, and with it (in `writes` when given) mark late outcomes
        reported (a turn cut short before it is stored flows them back again). A command is
        not conversation: the LLM never reads it (a command that changes the conversation,
        like /cancel, ends as CANCELLED and is kept)."""
        if turn.stop is TurnStop.COMMAND and not turn.settled:
            return
        await self.deps.history.append(ctx.user.id, ctx.turn_id, turn.stored,
                                       channel=ctx.msg.channel, at=self.deps.clock.now(),
                                       q=writes)
        if self.deps.journal is not None:  # the turn is stored: nothing left to replay
            await self.deps.journal.finish(ctx.turn_id, q=writes)
        if turn.settled and self.deps.approvals is not None:
            await self.deps.approvals.mark_reported(list(turn.settled), q=writes)
        if isinstance(run, ReactLoopResult):
            self.deps.metrics.tools_ran(run.tool_calls)
            self.deps.metrics.loop_ran(run.mode, [(e["from"], e["to"]) for e in run.trace
                                                  if e.get("kind") == "switch"])
            if self.deps.transcripts.wanted:
                self.deps.transcripts.write(turn_record(
                    ctx.turn_id, ctx.user.id, ctx.msg.channel, self.deps.clock.now(), run))
            await self._record_usage(ctx, run, writes)

    async def _record_usage(self, ctx: TurnContext, run: ReactLoopResult,
                            writes: Queries | None) -> None:
        """Once per turn (keyed by it); accounting never fails a turn that is stored."""
        if self.deps.usage is None:
            return
        try:
            await self.deps.usage.record(ctx.turn_id, ctx.user.id, ctx.msg.channel,
                                         self.deps.clock.now(), run.token_usage,
                                         run.llm_requests, q=writes)
        except Exception:
            log.warning("usage of turn %s not recorded", ctx.turn_id, exc_info=True)

    async def _keep_trace(self, ctx: TurnContext, before: StepResult,
                          run: ReactLoopResult | LLMFailure, waits: Waits,
                          turn: ComposedTurn, writes: Queries | None) -> None:
        if self.deps.traces is None:
            return
        now = self.deps.clock.now()
        try:  # a trace explains a turn; failing to keep one never fails the turn
            await self.deps.traces.write(turn_trace(ctx, before, run, waits, turn, now), now,
                                         q=writes)
        except Exception:
            log.exception("the trace of turn %s could not be kept", ctx.turn_id)

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

    def capabilities(self) -> list[str]:
        if self.deps.exposure is not None:  # the capabilities that are on, one line each
            return self.deps.exposure.prompt_lines()
        return [f"{t.name} ({_first_sentence(t.description)})" for t in self.deps.registry]


def _said_before(before: StepResult) -> list[dict[str, Any]]:
    if not before.notices:
        return []
    return [{"role": "assistant", "content": "\n\n".join(before.notices)}]


def _first_sentence(text: str) -> str:
    head = text.split(". ", 1)[0].strip().rstrip(".")
    return head[:120]
