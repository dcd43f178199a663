"""The approval flow around the loop.

    gate        a call whose tool needs approval does not start; its outcome is an
                ApprovalDraft (siblings run as usual; the loop stops after the round)
    open        after the turn, drafts become durable ApprovalRequests, shown together
    decide      the next message (or button) decides them (bot.approvals.decide): the
                stored arguments run once (`execute`), the outcome joins the turn
    sweep       expired and interrupted requests are settled, their owners told
                (bot.approvals.sweeper)

The policy comes from the registry (Tool.requires_approval, an agent's own check), never from
the LLM, and every step fails closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.approvals.lease import LeaseLost, run_leased
from bot.approvals.listing import pending_lines
from bot.approvals.model import (
    ApprovalDraft,
    ApprovalRequest,
    ExecutionOutcome,
    ExecutionStatus,
    waiting_result,
)
from bot.approvals.store import INTERRUPTED, ApprovalStore
from bot.approvals.sweeper import expired_line
from bot.clock import Clock
from bot.llm import LLM, ToolCall
from bot.tools import (
    Tool,
    ToolExecutionContext,
    ToolOutcome,
    ToolRegistry,
    ToolStatus,
    render_result,
)
from persona.lines import ApprovalLines, fill

if TYPE_CHECKING:
    from bot.turn import TurnContext

log = logging.getLogger(__name__)

CANCELLED = "User cancelled this action."


def describe(tool: Tool, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(summary, details) of a call, for the person deciding it: every argument the action
    will receive, an agent's task_instruction included (it is part of what runs)."""
    details = {k: v for k, v in arguments.items() if v is not None and v != ""}
    if tool.summarize is not None:  # the tool says it better (a calendar event's time...)
        return tool.summarize(arguments), details
    shown = ", ".join(f"{k}: {_short(v)}" for k, v in details.items())
    return f"{tool.name.replace('_', ' ')}" + (f" ({shown})" if shown else ""), details


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


class ApprovalFlow:
    def __init__(self, store: ApprovalStore, registry: ToolRegistry, clock: Clock, llm: LLM, *,
                 lines: ApprovalLines, confirm_edits: bool = True,
                 tool_timeout: float = 30.0, agent_timeout: float = 120.0) -> None:
        self.store = store
        self.registry = registry
        self.clock = clock
        self.llm = llm
        self.lines = lines
        self.confirm_edits = confirm_edits
        self.tool_timeout = tool_timeout
        self.agent_timeout = agent_timeout

    # --- 1. the gate (the loop's CallGate) ------------------------------------------------

    async def gate(self, call: ToolCall, tool: Tool, ctx: ToolExecutionContext
                   ) -> ToolOutcome | None:
        asks = tool.requires_approval or (tool.approval_if_untrusted and ctx.untrusted_context)
        if not asks or tool.is_agent:
            return None  # agents ask at their own approval point, once their fields are in
        try:
            arguments = tool.parse_arguments(call.arguments)
        except ValueError:
            return None  # the normal path turns bad arguments into a corrective result
        if tool.prepare is not None:
            try:
                arguments = await tool.prepare(arguments, ctx.for_call(call.id, tool.settings))
            except ValueError as err:  # refused before anyone is asked
                return ToolOutcome(call.id, tool.name, ToolStatus.FAILED, f"Error: {err}")
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
        chat or from the console, where there is no turn: `ctx` None)."""
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
            await self.store.finish(approval.id, False, f"refused: {problem}")
            log.error("approval %s not run: %s", approval.id, problem)
            return ExecutionOutcome(ExecutionStatus.FAILED, f"Not run: {problem}.")
        assert tool is not None
        # The approval id is the action's idempotency key (ctx.call_id).
        call_ctx = replace(tool_ctx.for_call(approval.id), approved=True)
        try:
            async with asyncio.timeout(self.agent_timeout if tool.is_agent
                                       else self.tool_timeout):
                # The heartbeat keeps this execution's lease while it runs (wall time).
                result = await run_leased(
                    tool.run_with_approval(approval.arguments, call_ctx),
                    renew=lambda: self.store.renew_lease(approval.id, self.clock.now()),
                    every=self.store.lease.total_seconds() / 3)
        except LeaseLost:  # settled as interrupted meanwhile; its owner was told so
            log.error("approval %s: lease lost while running; the action was stopped",
                      approval.id)
            return ExecutionOutcome(ExecutionStatus.INTERRUPTED,
                                    f"Not completed: {INTERRUPTED}.")
        except Exception as err:  # the action failed: say so, never retry it silently
            log.warning("approved action %s (%s) failed", approval.id, approval.tool_name,
                        exc_info=True)
            content = f"Error: {type(err).__name__}: {err}" if str(err) else \
                f"Error: {type(err).__name__}"
            await self.store.finish(approval.id, False, content)
            return ExecutionOutcome(ExecutionStatus.FAILED, content)
        ok = not (isinstance(result, ToolOutcome) and result.is_error)
        content = result.content if isinstance(result, ToolOutcome) else render_result(result)
        if isinstance(result, ToolOutcome) and result.status is ToolStatus.WAITING:
            ok, content = False, f"Not completed: {content}"
        if not await self.store.finish(approval.id, ok, content):
            log.warning("approval %s finished after it was settled as interrupted",
                        approval.id)
        # What the action did, also when its record was settled as interrupted meanwhile.
        return ExecutionOutcome(ExecutionStatus.EXECUTED if ok else ExecutionStatus.FAILED,
                                content)

    async def mark_reported(self, approval_ids: list[str]) -> None:
        """These outcomes reached the conversation (the turn that carried them is stored)."""
        await self.store.mark_reported(approval_ids)

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

    async def context_note(self, user_id: str) -> str | None:
        pending = await self.store.pending(user_id, self.clock.now())
        if not pending:
            return None
        listed = "\n".join(pending_lines(pending, numbered=False))
        return ("Waiting for the user's approval (the app asked them; their yes or no goes "
                f"to these, and nothing runs before it):\n{listed}\nDo not call these again; "
                "if they ask, remind them what is waiting.")


