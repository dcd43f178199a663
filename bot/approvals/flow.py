"""The approval flow around the loop.

    gate        a call whose tool needs approval does not start; its tool's check
                (`Tool.prepare`) runs first, and a failing check is the call's result (no
                card); else its outcome is an ApprovalDraft (siblings run as usual; the loop
                stops after the round)
    open        after the turn, drafts become durable ApprovalRequests, shown together
    decide      the next message (or button) decides them (bot.approvals.decide): the
                stored arguments run once (`execute`), the outcome joins the turn
    outcome     the tool's typed outcome (bot.tools.registry.ToolOutcome) is the request's:
                executed, refused, failed or unknown; an effect that settles later (a message in the
                outbox) is followed (bot.approvals.effects); an unknown outcome is told with
                what to check and the same action offered again (bot.approvals.retry)
    sweep       expired and interrupted requests are settled, their owners told
                (bot.approvals.sweeper)

The policy comes from the registry (Tool.requires_approval, an agent's own check), never from
the LLM, and every step fails closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bot.approvals.effects import Effect, EffectRecords, EffectWatch
from bot.approvals.lease import LeaseLost, run_leased
from bot.approvals.listing import pending_lines
from bot.approvals.outcomes import NOT_DONE, card_line, expired_line
from bot.approvals.retry import not_done_line, offer_again
from bot.approvals.store import INTERRUPTED, ApprovalStore
from bot.contracts.approvals import (
    ApprovalDraft,
    ApprovalRequest,
    ApprovalStatus,
    ExecutionOutcome,
    ExecutionStatus,
    waiting_result,
)
from bot.contracts.clock import Clock
from bot.contracts.tool_context import ToolExecutionContext
from bot.db import Queries
from bot.llm.port import LLM, ToolCall
from bot.tools.calls import render_result
from bot.tools.registry import Tool, ToolOutcome, ToolRegistry, ToolStatus
from persona.catalog import say
from persona.lines import ApprovalLines, fill

if TYPE_CHECKING:
    from bot.contracts.turn import TurnContext

log = logging.getLogger(__name__)

CANCELLED = "User cancelled this action."

# A tool's status as the outcome of an approved run. Nothing done: REFUSED; it may have acted
# (a send cut off, a time limit, a restart mid-call): UNKNOWN.
_EXECUTION = {
    ToolStatus.SUCCESS: ExecutionStatus.EXECUTED,
    ToolStatus.REFUSED: ExecutionStatus.REFUSED, ToolStatus.INVALID: ExecutionStatus.REFUSED,
    ToolStatus.DENIED: ExecutionStatus.REFUSED,
    ToolStatus.FAILED: ExecutionStatus.FAILED, ToolStatus.WAITING: ExecutionStatus.FAILED,
    ToolStatus.SKIPPED: ExecutionStatus.FAILED,
    ToolStatus.TIMEOUT: ExecutionStatus.UNKNOWN, ToolStatus.INTERRUPTED: ExecutionStatus.UNKNOWN,
    ToolStatus.UNKNOWN: ExecutionStatus.UNKNOWN,
}
# How the conversation's result opens when the tool's own text does not say it already.
_OPENERS = {ExecutionStatus.REFUSED: "Refused, nothing was done",
            ExecutionStatus.FAILED: "Failed", ExecutionStatus.UNKNOWN: "Outcome unknown"}
_PLAIN = ("Refused", "Failed", "Error", "Not ", "Outcome unknown")


def typed(result: Any) -> tuple[ExecutionStatus, str]:
    """An approved call's return value as its outcome and what the conversation hears. A
    plain value (not a ToolOutcome) from a tool that raised nothing is done."""
    if not isinstance(result, ToolOutcome):
        return ExecutionStatus.EXECUTED, render_result(result)
    status = _EXECUTION[result.status]
    content = result.content
    if result.status is ToolStatus.WAITING:
        content = f"Not completed: {content}"
    if status in _OPENERS and not content.startswith(_PLAIN):
        content = f"{_OPENERS[status]}: {content}"
    return status, content


def describe(tool: Tool, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(summary, details) of a call, for the person deciding it: every argument the action
    will receive, an agent's task_instruction included (it is part of what runs)."""
    details = {k: v for k, v in arguments.items() if v is not None and v != ""}
    if tool.summarize is not None:  # the tool says it better (a calendar event's time...)
        return tool.summarize(arguments), details
    shown = ", ".join(f"{k}: {_short(v)}" for k, v in details.items())
    return say("card_tool_call", tool=tool.name.replace("_", " "),
               arguments=f" ({shown})" if shown else ""), details


async def named_summary(tool: Tool, arguments: dict[str, Any], ctx: ToolExecutionContext
                         ) -> str | None:
    """The tool's own line for the card, naming what it acts on; None: the generic one."""
    try:
        if tool.describe is not None:
            return await tool.describe(arguments, ctx)
        return tool.summarize(arguments) if tool.summarize is not None else None
    except Exception:  # a look-up that fails must not block asking: the generic line will do
        log.warning("describing %s for its approval failed", tool.name, exc_info=True)
        return None


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def asks_first(tool: Tool, ctx: ToolExecutionContext) -> bool:
    """Whether a call of `tool` waits for the person's OK: its registry policy says always,
    or the turn is tainted (it holds third-party text: docs/security.md) and the tool is not
    a declared read, whatever its `approval:` says."""
    return tool.requires_approval or (ctx.untrusted_context and (
        tool.approval_if_untrusted or not tool.only_reads))


class ApprovalFlow:
    def __init__(self, store: ApprovalStore, registry: ToolRegistry, clock: Clock, llm: LLM, *,
                 lines: ApprovalLines,
                 tool_timeout: float = 30.0, agent_timeout: float = 120.0,
                 effects: Sequence[EffectRecords] = ()) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock
        self.llm = llm
        self.lines = lines
        self.tool_timeout = tool_timeout
        self.agent_timeout = agent_timeout
        # Where approved actions' effects settle later: the records a tool names by its
        # `effect` key (bot.approvals.effects).
        self.effects = EffectWatch(store, self._effect_key, effects)

    # --- 1. the gate (the loop's CallGate) ------------------------------------------------

    async def gate(self, call: ToolCall, tool: Tool, ctx: ToolExecutionContext
                   ) -> ToolOutcome | None:
        if not asks_first(tool, ctx) or tool.is_agent:
            return None  # agents ask at their own approval point, once their fields are in
        try:
            arguments = tool.parse_arguments(call.arguments)
        except ValueError:
            return None  # the normal path turns bad arguments into a corrective result
        if tool.prepare is not None:
            try:
                arguments = await tool.prepare(arguments, ctx.for_call(call.id, tool.settings))
            except ValueError as err:  # the check failed: refused before anyone is asked
                return ToolOutcome(call.id, tool.name, ToolStatus.REFUSED, f"Error: {err}")
        summary, details = describe(tool, arguments)
        if not tool.requires_approval and self.lines.approval_untrusted_reason:
            # asked only because of what a third party wrote: the card says so
            details = {**details, self.lines.approval_untrusted_label:
                       self.lines.approval_untrusted_reason}
        summary = await named_summary(tool, arguments, ctx) or summary
        draft = ApprovalDraft(tool.name, call.id, arguments, summary, details)
        return ToolOutcome(call.id, tool.name, ToolStatus.WAITING, waiting_result(draft),
                           pause=draft, result_status="WAITING_FOR_APPROVAL")

    # --- 2. drafts become requests ----------------------------------------------------------

    async def open(self, ctx: TurnContext, drafts: list[ApprovalDraft]
                   ) -> list[ApprovalRequest]:
        now = self.clock.now()
        trigger = ctx.msg.from_trigger
        return [await self.store.create(
            user_id=ctx.user.id, call_id=d.call_id, tool_name=d.tool_name,
            arguments=d.arguments, summary=d.summary, details=d.details, at=now,
            allow_modification=d.allow_modification, turn_id=ctx.turn_id,
            source="trigger" if trigger else "chat", trigger_task_id=trigger)
            for d in drafts]

    async def execute(self, ctx: TurnContext | None, approval: ApprovalRequest,
                      tool_ctx: ToolExecutionContext | None = None) -> ExecutionOutcome:
        """Run the stored call once: whoever wins approved -> executing runs it. `tool_ctx`:
        whose action it is when not the turn's own person (the owner deciding for them, in a
        chat or from the console, where there is no turn: `ctx` None). The outcome is the
        tool's typed one (bot.tools.registry.ToolOutcome), recorded as the request's status."""
        if tool_ctx is None:
            assert ctx is not None, "a decision outside a turn says whose action it is"
            tool_ctx = ctx.tool_ctx
        now = self.clock.now()
        if not await self.store.begin_execution(approval.id, now):
            return ExecutionOutcome(ExecutionStatus.ALREADY_HANDLED,
                                    "Not run: this action was already handled.")
        tool = self.registry.get(approval.tool_name)
        problem = None if tool is not None else f"the tool {approval.tool_name} is gone"
        if problem is None and not approval.intact():
            problem = "its arguments changed after they were approved"
        if problem is not None:
            await self.store.finish(approval.id, ApprovalStatus.REFUSED, f"refused: {problem}")
            log.error("approval %s not run: %s", approval.id, problem)
            return ExecutionOutcome(ExecutionStatus.REFUSED, f"Not run: {problem}.")
        assert tool is not None
        status, content = await self._run(tool, approval, tool_ctx)
        if status is ExecutionStatus.INTERRUPTED:  # settled under it; its owner was told
            return ExecutionOutcome(ExecutionStatus.UNKNOWN, content, told=True)
        # Done, but its effect waits in a durable record (a message in the outbox): the
        # approval follows it there (bot.approvals.effects).
        pending = status is ExecutionStatus.EXECUTED and self.effects.follows(tool.name)
        if not await self.store.finish(approval.id, status.record, content,
                                       effect_pending=pending):
            log.warning("approval %s finished after it was settled as interrupted",
                        approval.id)
        # What the action did, also when its record was settled as interrupted meanwhile.
        return ExecutionOutcome(status, content)

    async def _run(self, tool: Tool, approval: ApprovalRequest, tool_ctx: ToolExecutionContext
                   ) -> tuple[ExecutionStatus, str]:
        """The approved call, run once under its lease and time limit, as a typed outcome
        (INTERRUPTED: the lease was lost; the request is settled already)."""
        # The approval id is the action's idempotency key (ctx.call_id).
        call_ctx = replace(tool_ctx.for_call(approval.id), approved=True)
        limit = self.agent_timeout if tool.is_agent else self.tool_timeout
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                # The heartbeat keeps this execution's lease while it runs (wall time).
                result = await run_leased(
                    tool.run_with_approval(approval.arguments, call_ctx),
                    renew=lambda: self.store.renew_lease(approval.id, self.clock.now()),
                    every=self.store.lease.total_seconds() / 3)
        except LeaseLost:
            log.error("approval %s: lease lost while running; the action was stopped",
                      approval.id)
            return ExecutionStatus.INTERRUPTED, INTERRUPTED
        except TimeoutError as err:
            if not deadline.expired():
                return ExecutionStatus.FAILED, f"Error: TimeoutError: {err or 'timed out'}"
            log.warning("approved action %s (%s) did not finish within %g s", approval.id,
                        approval.tool_name, limit)
            return ExecutionStatus.UNKNOWN, (
                f"Outcome unknown: it did not finish within {limit:g} s and was stopped, so it "
                "may or may not have happened.")
        except Exception as err:  # the action failed: say so, never retry it silently
            log.warning("approved action %s (%s) failed", approval.id, approval.tool_name,
                        exc_info=True)
            return ExecutionStatus.FAILED, f"Error: {type(err).__name__}: {err}" if str(err) \
                else f"Error: {type(err).__name__}"
        return typed(result)

    # --- what did not happen as asked ------------------------------------------------------

    async def not_done(self, approval: ApprovalRequest, effect: Effect | None = None
                       ) -> tuple[str, ApprovalRequest | None]:
        """What the person is told of an approved action that did not happen as asked, and,
        when its outcome is unknown, the same action offered again (a new approval)."""
        if approval.status is ApprovalStatus.UNKNOWN and effect is None:
            effect = await self._effect(approval)  # the record's owner may say it better
        again = await offer_again(self.store, self.registry, approval, self.clock.now()) \
            if approval.status is ApprovalStatus.UNKNOWN else None
        return not_done_line(approval, self.lines, effect), again

    def _effect_key(self, tool_name: str) -> str | None:
        tool = self.registry.get(tool_name)
        return tool.effect if tool is not None else None

    async def _effect(self, approval: ApprovalRequest) -> Effect | None:
        records = self.effects.records(approval.tool_name)
        try:
            return await records.effect(approval) if records is not None else None
        except Exception:
            log.warning("reading the effect of approval %s failed", approval.id, exc_info=True)
            return None

    async def mark_reported(self, approval_ids: list[str], q: Queries | None = None) -> None:
        """These outcomes reached the conversation (the turn that carried them is stored, in
        `q` when given: the same transaction or batch)."""
        await self.store.mark_reported(approval_ids, q)

    def expired_line(self, approval: ApprovalRequest) -> str:
        return expired_line(approval, self.lines)

    # --- listing -------------------------------------------------------------------------------

    async def list_pending_approvals(self, user_id: str) -> list[ApprovalRequest]:
        """What waits for this user's OK now, chat and trigger requests alike."""
        return await self.store.pending(user_id, self.clock.now())

    def listing(self, pending: list[ApprovalRequest]) -> str:
        if not pending:
            return self.lines.approval_none_pending
        return fill(self.lines.approval_listing,
                    approvals="\n".join(pending_lines(pending, until=True)))

    async def lately(self, user_id: str) -> str | None:
        """/pending's account of the approved requests of the last day that were not done
        as asked (refused, failed, outcome unknown, interrupted); None when there are none."""
        since = self.clock.now() - timedelta(days=1)
        recent = await self.store.recent_outcomes(user_id, since, NOT_DONE)
        if not recent:
            return None
        return fill(self.lines.approval_lately,
                    approvals="\n".join(card_line(a, self.lines) for a in recent))

    async def context_note(self, user_id: str) -> str | None:
        pending = await self.store.pending(user_id, self.clock.now())
        if not pending:
            return None
        listed = "\n".join(pending_lines(pending, numbered=False))
        return ("Waiting for the user's approval (the app asked them; their yes or no goes "
                f"to these, and nothing runs before it):\n{listed}\nDo not call these again; "
                "if they ask, remind them what is waiting.")
