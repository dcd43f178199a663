"""The approval flow around the loop.

    gate        a call whose tool needs approval does not start; its outcome is an
                ApprovalDraft (siblings run as usual; the loop stops after the round)
    open        after the turn, drafts become durable ApprovalRequests, shown together
    before_loop the next message (or button) decides them: the stored arguments run once,
                the outcome joins the turn as a tool result, and the loop goes on
    sweep       expired requests are closed and their owners told

The policy comes from the registry (Tool.requires_approval, an agent's own check), never from
the LLM, and every step fails closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from bot.approvals.lease import LeaseLost, run_leased
from bot.approvals.model import ApprovalDraft, ApprovalRequest, ApprovalStatus
from bot.approvals.replies import Decision, ParsedReply, Verdict, interpret_prompt, parse_reply
from bot.approvals.store import INTERRUPTED, ApprovalStore
from bot.clock import Clock
from bot.envelopes import TurnStop
from bot.llm import LLM, LLMError, ToolCall
from bot.tasks.resume import Answered, fill, join_call
from bot.tools import (
    Tool,
    ToolExecutionContext,
    ToolOutcome,
    ToolRegistry,
    ToolStatus,
    render_result,
)

if TYPE_CHECKING:
    from bot.orchestrator import TurnContext

log = logging.getLogger(__name__)

CANCELLED = "User cancelled this action."


@dataclass(frozen=True)
class ApprovalLines:
    intro: str
    expired: str  # {summary}, {minutes}


def describe(tool: Tool, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(summary, details) of a call, for the person deciding it: every argument the action
    will receive, an agent's task_instruction included (it is part of what runs)."""
    details = {k: v for k, v in arguments.items() if v is not None and v != ""}
    shown = ", ".join(f"{k}: {_short(v)}" for k, v in details.items())
    return f"{tool.name.replace('_', ' ')}" + (f" ({shown})" if shown else ""), details


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def waiting_result(draft: ApprovalDraft) -> str:
    return (f"Not run yet: waiting for the user's approval of “{draft.summary}”. The app has "
            "asked them; it runs only if they approve. Do not call it again or claim it is "
            "done.")


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
        if not tool.requires_approval or tool.is_agent:
            return None  # agents ask at their own approval point, once their fields are in
        try:
            arguments = tool.parse_arguments(call.arguments)
        except ValueError:
            return None  # the normal path turns bad arguments into a corrective result
        summary, details = describe(tool, arguments)
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

    def prompt_text(self, approvals: list[ApprovalRequest], *, listed: bool = True) -> str:
        """The intro, and with `listed` the requests themselves (for the history; channels
        render them from the Reply's approvals)."""
        if not listed:
            return self.lines.intro
        lines = "\n".join(f"{i}. {a.summary} (code {a.code})" for i, a in enumerate(approvals, 1))
        return f"{self.lines.intro}\n{lines}"

    # --- 3. the next message decides -------------------------------------------------------

    async def before_loop(self, ctx: TurnContext) -> Answered | None:
        """Apply the decisions in this message. None: the loop runs (with any outcomes joined
        into the turn); an Answered: the turn ends with that reply."""
        await self._flow_back_settled(ctx)
        now = self.clock.now()
        if ctx.msg.button is not None:
            parsed = await self._from_button(ctx)
            if isinstance(parsed, Answered):
                return parsed
        else:
            pending = await self.store.pending(ctx.user.id, now)
            if ctx.msg.text.strip().lower() in ("/pending", "/approvals"):
                return Answered(self.listing(pending), TurnStop.COMMAND)
            if not pending:
                return None
            parsed = await parse_reply(ctx.msg.text, pending, interpret=self._interpret)
            if parsed.unrelated:
                return None
            if parsed.clarify:
                return Answered(parsed.clarify, TurnStop.WAITING_FOR_USER)
            if parsed.refused and not parsed.decisions:
                return Answered(f"I have nothing waiting under {', '.join(parsed.refused)}. "
                                + self.listing(pending), TurnStop.WAITING_FOR_USER)
        return await self._apply(ctx, parsed.decisions)

    async def _from_button(self, ctx: TurnContext) -> ParsedReply | Answered:
        assert ctx.msg.button is not None
        approval = await self.store.get(ctx.msg.button.approval_id)
        if approval is None:
            return Answered("I don't know that request.", TurnStop.WAITING_FOR_USER)
        if approval.user_id != ctx.user.id and not ctx.user.is_owner:
            return Answered("That request isn't yours to decide.", TurnStop.WAITING_FOR_USER)
        if approval.status is not ApprovalStatus.PENDING or approval.expires_at <= \
                self.clock.now():
            return Answered(f"“{approval.summary}” was already {_state(approval)}.",
                            TurnStop.WAITING_FOR_USER)
        option = ctx.msg.button.option.lower()
        verdict = {"approve": Verdict.APPROVE, "yes": Verdict.APPROVE,
                   "cancel": Verdict.REJECT, "no": Verdict.REJECT,
                   "reject": Verdict.REJECT}.get(option)
        if verdict is None:  # "edit" on a button: ask for the change in words
            return Answered(f"What should I change in “{approval.summary}”? (Reply with the "
                            "change, e.g. \"make the subject 'Q3'\".)", TurnStop.WAITING_FOR_USER)
        return ParsedReply([Decision(approval.id, verdict)])

    async def _apply(self, ctx: TurnContext, decisions: list[Decision]) -> Answered | None:
        by = f"{ctx.msg.channel}:{ctx.msg.address or ctx.user.id}"
        said: list[str] = []
        to_confirm: list[ApprovalRequest] = []
        joined = 0
        for decision in decisions:
            approval = await self.store.get(decision.approval_id)
            if approval is None or (approval.user_id != ctx.user.id and not ctx.user.is_owner):
                said.append("That request isn't yours to decide.")
                continue
            if approval.user_id != ctx.user.id:
                said.append(await self._decide_for_someone_else(ctx, approval, decision, by))
                continue
            if decision.verdict is Verdict.EDIT:
                outcome = await self._edit(ctx, approval, decision.changes, by)
                if isinstance(outcome, ApprovalRequest):
                    to_confirm.append(outcome)
                elif isinstance(outcome, str):
                    said.append(outcome)
                else:
                    joined += 1
                continue
            status = ApprovalStatus.APPROVED if decision.verdict is Verdict.APPROVE \
                else ApprovalStatus.REJECTED
            if not await self.store.decide(approval.id, status, by=by, at=self.clock.now()):
                current = await self.store.get(approval.id)
                said.append(f"“{approval.summary}” was already {_state(current or approval)}.")
                continue
            content = await self._execute(ctx, approval) if status is \
                ApprovalStatus.APPROVED else CANCELLED
            self._join(ctx, approval, approval.arguments, content)
            joined += 1
        if joined:
            ctx.notices.extend(said)
            if to_confirm:
                ctx.drafts.extend(to_confirm)
            return None  # the loop answers in the persona's voice
        if to_confirm:
            ctx.drafts.extend(to_confirm)
            return Answered("\n".join(said), TurnStop.WAITING_FOR_USER)
        return Answered("\n".join(said) or "Nothing was waiting for that.",
                        TurnStop.WAITING_FOR_USER)

    async def _decide_for_someone_else(self, ctx: TurnContext, approval: ApprovalRequest,
                                       decision: Decision, by: str) -> str:
        """The owner decides another user's request: it runs as that user, and its outcome
        reaches their conversation with their next message (it stays unreported here)."""
        if decision.verdict is Verdict.EDIT:
            return "Only the person who asked can change their request; approve or cancel it."
        status = ApprovalStatus.APPROVED if decision.verdict is Verdict.APPROVE \
            else ApprovalStatus.REJECTED
        if not await self.store.decide(approval.id, status, by=by, at=self.clock.now()):
            current = await self.store.get(approval.id)
            return f"“{approval.summary}” was already {_state(current or approval)}."
        if status is ApprovalStatus.REJECTED:
            await self.store.finish_rejected(approval.id, CANCELLED)
            return f"Cancelled “{approval.summary}” for {approval.user_id}."
        theirs = replace(ctx.tool_ctx, user_id=approval.user_id)
        content = await self._execute(ctx, approval, theirs)
        return f"Approved “{approval.summary}” for {approval.user_id}: {content}"

    def _join(self, ctx: TurnContext, approval: ApprovalRequest,
                    arguments: dict[str, Any], content: str) -> None:
        join_call(ctx, f"call_approval_{uuid.uuid4().hex[:16]}", approval.tool_name, arguments,
                  content)
        ctx.settled.append(approval.id)

    async def _execute(self, ctx: TurnContext, approval: ApprovalRequest,
                       tool_ctx: ToolExecutionContext | None = None) -> str:
        """Run the stored call once: whoever wins approved -> executing runs it."""
        now = self.clock.now()
        if not await self.store.begin_execution(approval.id, now):
            return "Not run: this action was already handled."
        tool = self.registry.get(approval.tool_name)
        problem = None if tool is not None else f"the tool {approval.tool_name} is gone"
        if problem is None and not approval.intact():
            problem = "its arguments changed after they were approved"
        if problem is not None:
            await self.store.finish(approval.id, False, f"refused: {problem}")
            log.error("approval %s not run: %s", approval.id, problem)
            return f"Not run: {problem}."
        assert tool is not None
        # The approval id is the action's idempotency key (ctx.call_id).
        call_ctx = (tool_ctx or ctx.tool_ctx).for_call(approval.id)
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
            return f"Not completed: {INTERRUPTED}."
        except Exception as err:  # the action failed: say so, never retry it silently
            content = f"Error: {type(err).__name__}: {err}" if str(err) else \
                f"Error: {type(err).__name__}"
            await self.store.finish(approval.id, False, content)
            return content
        ok = not (isinstance(result, ToolOutcome) and result.is_error)
        content = result.content if isinstance(result, ToolOutcome) else render_result(result)
        if isinstance(result, ToolOutcome) and result.status is ToolStatus.WAITING:
            ok, content = False, f"Not completed: {content}"
        if not await self.store.finish(approval.id, ok, content):
            log.warning("approval %s finished after it was settled as interrupted",
                        approval.id)
        return content

    async def _edit(self, ctx: TurnContext, approval: ApprovalRequest, changes: str, by: str
                    ) -> ApprovalRequest | str | None:
        """A change: a new approval bound to the new arguments (shown for confirmation, or run
        at once when confirm_edits is off). Returns the new request, what to say, or None
        when the edited action ran."""
        tool = self.registry.get(approval.tool_name)
        if tool is None or not approval.allow_modification:
            return f"“{approval.summary}” can't be changed, only approved or cancelled."
        try:
            arguments = tool.validated(await self._rewrite(tool, approval, changes),
                                       ctx.tool_ctx)
        except (ValueError, LLMError) as err:
            return f"I couldn't make that change to “{approval.summary}”: {err}"
        now = self.clock.now()
        if not await self.store.decide(approval.id, ApprovalStatus.SUPERSEDED, by=by, at=now):
            return f"“{approval.summary}” was already {_state(approval)}."
        summary, details = describe(tool, arguments)
        summary = tool.summarize(arguments) if tool.summarize else summary
        edited = await self.store.create(
            user_id=ctx.user.id, call_id=approval.call_id, tool_name=tool.name,
            arguments=arguments, summary=summary, details=details, at=now,
            replaces=approval.id, turn_id=ctx.turn_id, source=approval.source,
            trigger_task_id=approval.trigger_task_id)
        if self.confirm_edits:
            return edited
        await self.store.decide(edited.id, ApprovalStatus.APPROVED, by=by, at=now)
        self._join(ctx, edited, arguments, await self._execute(ctx, edited))
        return None

    async def _rewrite(self, tool: Tool, approval: ApprovalRequest, changes: str
                       ) -> dict[str, Any]:
        prompt = (
            f"Tool: {tool.name}: {tool.description}\nParameters (JSON schema): "
            f"{json.dumps(tool.parameters)}\nCurrent arguments: "
            f"{json.dumps(approval.arguments, default=str)}\nThe user asked for this change: "
            f"{json.dumps(changes)}\n\nReply with the complete new arguments as one JSON "
            "object and nothing else. Change only what the user asked for.")
        response = await self.llm.complete(
            [{"role": "system", "content": "You edit the arguments of a pending action."},
             {"role": "user", "content": prompt}], None)
        text = response.content or ""
        try:
            start, end = text.index("{"), text.rindex("}") + 1
            edited = json.loads(text[start:end])
        except ValueError as err:
            raise ValueError("I couldn't work out the new details") from err
        if not isinstance(edited, dict):
            raise ValueError("I couldn't work out the new details")
        return edited

    async def _interpret(self, text: str, pending: list[ApprovalRequest]) -> str:
        response = await self.llm.complete(
            [{"role": "system", "content": "You read replies to approval requests. Answer "
                                           "with JSON only."},
             {"role": "user", "content": interpret_prompt(text, pending)}], None)
        return response.content or ""

    async def _flow_back_settled(self, ctx: TurnContext) -> None:
        """Approvals settled outside this turn (expired, or finished in a turn that was cut
        short) join it as the calls' outcomes, once. The user hears of an expiry here unless
        the sweeper told them already."""
        expired_now = {a.id for a in await self.store.expire_due(self.clock.now(), ctx.user.id)}
        for approval in await self.store.unreported(ctx.user.id):
            if approval.status is ApprovalStatus.EXPIRED:
                content = (f"Not run: the user did not approve “{approval.summary}” in time; "
                           "the request expired.")
                if approval.id in expired_now:
                    ctx.notices.append(self._expired_line(approval))
            else:
                content = approval.result or f"Request {_state(approval)}."
            self._join(ctx, approval, approval.arguments, content)

    def _expired_line(self, approval: ApprovalRequest) -> str:
        minutes = int((approval.expires_at - approval.created_at).total_seconds() // 60)
        return fill(self.lines.expired, summary=approval.summary, minutes=minutes)

    # --- sweeping, listing ---------------------------------------------------------------------

    async def sweep(self) -> list[tuple[ApprovalRequest, str]]:
        """Expire what is past its time; returns (approval, what to tell its owner)."""
        return [(a, self._expired_line(a)) for a in await self.store.expire_due(self.clock.now())]

    async def list_pending_approvals(self, user_id: str) -> list[ApprovalRequest]:
        """What waits for this user's OK now, chat and trigger requests alike."""
        return await self.store.pending(user_id, self.clock.now())

    def listing(self, pending: list[ApprovalRequest]) -> str:
        if not pending:
            return "Nothing is waiting for your approval."
        return "Waiting for your OK:\n" + "\n".join(
            f"{i}. {a.summary} (code {a.code}, until {a.expires_at:%H:%M} UTC)"
            for i, a in enumerate(pending, 1))

    async def context_note(self, user_id: str) -> str | None:
        pending = await self.store.pending(user_id, self.clock.now())
        if not pending:
            return None
        listed = "\n".join(f"- {a.summary} (code {a.code})" for a in pending)
        return ("Waiting for the user's approval (the app asked them; their yes or no goes "
                f"to these, and nothing runs before it):\n{listed}\nDo not call these again; "
                "if they ask, remind them what is waiting.")


def _state(approval: ApprovalRequest) -> str:
    return {ApprovalStatus.APPROVED: "approved", ApprovalStatus.EXECUTING: "approved",
            ApprovalStatus.EXECUTED: "done", ApprovalStatus.FAILED: "tried, and it failed",
            ApprovalStatus.REJECTED: "cancelled", ApprovalStatus.EXPIRED: "expired",
            ApprovalStatus.SUPERSEDED: "replaced by an edited request",
            ApprovalStatus.PENDING: "waiting"}[approval.status]
