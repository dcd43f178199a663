"""The approvals step of a turn: the person's next message (or button) decides what waits.

Decisions are compare-and-sets in the store; an approved call runs its stored arguments once
(bot.approvals.flow); the outcome joins the turn as a fresh call with its result and the loop
answers in the persona's voice. Outcomes settled outside any turn (expired, or finished in a
turn cut short) join the next turn of their owner, once. The step returns a value; it never
changes the turn's context.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from bot.approvals.behalf import Behalf, decide_on_behalf
from bot.approvals.buttons import ButtonAnswers
from bot.approvals.flow import CANCELLED, ApprovalFlow, describe, named_summary
from bot.approvals.listing import pending_lines
from bot.approvals.outcomes import card_line, state_word
from bot.approvals.replies import Decision, ParsedReply, Verdict, parse_reply
from bot.approvals.retry import answerable
from bot.approvals.store import HOLDING
from bot.contracts.answer_words import AnswerWords, answer_words, words_for
from bot.contracts.approvals import (
    ApprovalRequest,
    ApprovalStatus,
    ExecutionOutcome,
    ExecutionStatus,
)
from bot.contracts.envelopes import ButtonPress, TurnStop
from bot.contracts.options import Option
from bot.contracts.people import User
from bot.contracts.tool_context import ToolExecutionContext
from bot.contracts.turn import Answered, Continue, Joined, StepResult, TurnContext, merge
from bot.llm.port import LLMError
from bot.people.users import UserStore
from bot.tools.registry import Tool
from persona.lines import Lines, fill

log = logging.getLogger(__name__)

WAITING = TurnStop.WAITING_FOR_USER
# Other kinds of prompts waiting for this person, each named with how to answer it (a task's
# question, a pairing request): a bare "yes" could be meant for one of them.
Elsewhere = Callable[[User], Awaitable[list[str]]]


class ApprovalStep:
    """Step: pending approvals get the message first."""

    name = "approvals"
    reads = HOLDING.name  # pending requests, and outcomes the conversation has not heard

    def __init__(self, flow: ApprovalFlow, users: UserStore, *, lines: Lines,
                 can_edit: Callable[[str], bool] = lambda channel: False,
                 words: AnswerWords | None = None, elsewhere: Elsewhere | None = None) -> None:
        self.flow = flow
        self.words = words or answer_words()  # the persona's languages (bot.approvals.grammar)
        self.elsewhere = elsewhere
        self.store = flow.store
        self.users = users
        self.lines = lines  # the approval lines, and the pairing buttons' answers
        # Whether a channel edits a settled card to show its outcome; where it cannot, an
        # outcome other than "done" is said with the reply.
        self.can_edit = can_edit
        self.buttons = ButtonAnswers(self.store, flow.clock, lines=lines)

    async def before(self, ctx: TurnContext) -> StepResult:
        settled = await self._flow_back_settled(ctx)
        if ctx.msg.button is not None:
            parsed = await self._from_button(ctx, ctx.msg.button, settled.settled)
        else:
            parsed = await self._from_text(ctx)
        if isinstance(parsed, Answered | Continue):
            return merge(settled, parsed)
        return merge(settled, await self._apply(ctx, parsed.decisions))

    async def _from_text(self, ctx: TurnContext) -> ParsedReply | StepResult:
        if ctx.msg.from_trigger:
            return Continue()
        now = self.flow.clock.now()
        pending = [a for a in await self.store.pending(ctx.user.id, now)
                   if answerable(a, ctx.msg.received_at)]
        asked = await self.store.take_change_asked(ctx.user.id, now) if pending else None
        if not pending:
            return Continue()
        elsewhere = self.elsewhere
        # Only the person's own words answer (ctx.msg.text): forwarded or quoted text
        # (ctx.msg.third_party) never reaches the grammar.
        parsed = await parse_reply(
            ctx.msg.text, pending, lines=self.lines, words=words_for(self.words,
                                                                     ctx.user.language),
            elsewhere=(lambda: elsewhere(ctx.user)) if elsewhere is not None else None)
        if asked is not None and (parsed.unrelated or parsed.clarify) and not parsed.question \
                and ctx.msg.text.strip():
            # Valet asked what to change (Edit was tapped): anything but a clear yes, no or
            # question is the change, which makes a new card (it never approves).
            return ParsedReply([Decision(asked.id, Verdict.EDIT, ctx.msg.text.strip())])
        if parsed.unrelated:
            # Not an answer of the table: a message like any other, and what waits still
            # waits. Its answer ends with one line naming what waits and how to answer.
            return Continue(after=(self._still_waiting(pending),))
        if parsed.clarify:
            return Answered(text=parsed.clarify, stop=WAITING)
        if parsed.refused and not parsed.decisions:
            return Answered(text=fill(self.lines.approval_unknown_codes,
                                      codes=", ".join(parsed.refused),
                                      listing=self.flow.listing(pending)), stop=WAITING)
        return parsed

    def _still_waiting(self, pending: list[ApprovalRequest]) -> str:
        if len(pending) == 1:
            return fill(self.lines.approval_still_waiting, approvals=pending[0].summary,
                        code=pending[0].code)
        return fill(self.lines.approval_still_waiting_several,
                    approvals="; ".join(pending_lines(pending, code=False)))

    async def _from_button(self, ctx: TurnContext, button: ButtonPress,
                           flowed_back: tuple[str, ...] = ()) -> ParsedReply | StepResult:
        """`flowed_back`: approvals whose outcome joins this turn now (never reported)."""
        approval = await self.store.get(button.approval_id)
        refusal = self._not_for(approval, ctx.user)
        if refusal is not None or approval is None:
            return Answered(text=refusal or "", stop=WAITING)
        if approval.id in flowed_back and approval.status is not ApprovalStatus.EXPIRED:
            # Decided by this very press in a turn that was cut short (this is its redo, on
            # another worker or after a restart): its outcome has just joined the turn, and
            # the loop answers it as that turn would have, not "already done".
            return Continue()
        if self._settled(approval):
            return Answered(text=self._already(approval), stop=WAITING)
        option = button.choice
        # Edit (or a word no button offers): ask for the change in words; nothing is decided.
        if option is None or option is Option.EDIT:
            await self.store.ask_change(approval.id, self.flow.clock.now())
            field = next(iter(approval.arguments), "subject").replace("_", " ")
            return Answered(text=fill(self.lines.approval_what_to_change,
                                      summary=approval.summary, field=field), stop=WAITING)
        return ParsedReply([Decision(approval.id, Verdict.of(option))])

    async def answer_button(self, user: User, button: ButtonPress) -> str:
        """The short answer to a button press, at once (bot.approvals.buttons)."""
        return await self.buttons.answer_button(user, button)

    def _not_for(self, approval: ApprovalRequest | None, user: User) -> str | None:
        return self.buttons.not_for(approval, user)

    def _already(self, approval: ApprovalRequest, summary: str | None = None) -> str:
        """“<summary>” was already <what became of it>."""
        return fill(self.lines.approval_already, summary=summary or approval.summary,
                    state=self._state(approval))

    def _state(self, approval: ApprovalRequest) -> str:
        return state_word(approval, self.lines, self.flow.clock.now())

    async def answers_pending(self, user_id: str, text: str) -> bool:
        """Whether a message answers what waits for this person's OK (read without an LLM
        call): such a message is decided by this step in a turn of its own, never added to a
        turn that is already running."""
        now = self.flow.clock.now()
        pending = await self.store.pending(user_id, now)
        if not pending:
            return False
        if await self.store.change_asked(user_id, now):
            return True
        user = await self.users.get(user_id)
        words = words_for(self.words, user.language if user else None)
        return not (await parse_reply(text, pending, words=words)).unrelated

    def _settled(self, approval: ApprovalRequest) -> bool:
        return self.buttons.settled(approval)

    async def _apply(self, ctx: TurnContext, decisions: list[Decision]) -> StepResult:
        by = f"{ctx.msg.channel}:{ctx.msg.address or ctx.user.id}"
        said: list[str] = []
        to_confirm: list[ApprovalRequest] = []
        joined: list[Joined] = []
        settled: list[str] = []
        for decision in decisions:
            approval = await self.store.get(decision.approval_id)
            if approval is None or (approval.user_id != ctx.user.id and not ctx.user.is_owner):
                said.append(self.lines.approval_not_yours)
                continue
            if approval.user_id != ctx.user.id:
                said.append(await self._decide_for_someone_else(ctx, approval, decision, by))
                continue
            if decision.verdict is Verdict.EDIT:
                outcome = await self._edit(ctx, approval, decision.changes, by)
                if isinstance(outcome, ApprovalRequest):
                    to_confirm.append(outcome)
                else:
                    said.append(outcome)
                continue
            status = ApprovalStatus.APPROVED if decision.verdict is Verdict.APPROVE \
                else ApprovalStatus.REJECTED
            if not await self.store.decide(approval.id, status, by=by, at=self.flow.clock.now()):
                current = await self.store.get(approval.id)
                said.append(self._already(current or approval, approval.summary))
                continue
            content = CANCELLED
            if status is ApprovalStatus.APPROVED:
                execution = await self.flow.execute(ctx, approval)
                content = execution.content
                told, again = await self._not_done(ctx, approval, execution)
                said += told
                to_confirm += again
            joined.append(_joined(approval, approval.arguments, content))
            settled.append(approval.id)
        if joined:  # the loop answers in the persona's voice
            return Continue(joined=tuple(joined), notices=tuple(said),
                            prompts=tuple(to_confirm), settled=tuple(settled))
        text = "\n".join(said) or ("" if to_confirm else self.lines.approval_nothing_waiting)
        return Answered(text=text, stop=WAITING, prompts=tuple(to_confirm))

    async def _not_done(self, ctx: TurnContext, approval: ApprovalRequest,
                        ran: ExecutionOutcome) -> tuple[list[str], list[ApprovalRequest]]:
        """What the person is told with the reply when an approved action did not happen as
        asked (an unknown outcome: what to check, and the action offered again), beyond what
        the card says where the channel edits it."""
        if ran.status is ExecutionStatus.EXECUTED or ran.told:
            return [], []
        current = await self.store.get(approval.id) or approval
        if ran.status is ExecutionStatus.UNKNOWN:
            line, again = await self.flow.not_done(current)
            return [line], [again] if again is not None else []
        if ran.status in (ExecutionStatus.REFUSED, ExecutionStatus.FAILED) and \
                not self.can_edit(ctx.msg.channel):
            return [card_line(current, self.lines)], []
        return [], []

    async def _decide_for_someone_else(self, ctx: TurnContext, approval: ApprovalRequest,
                                       decision: Decision, by: str) -> str:
        """The owner decides another user's request: it runs as that user (their timezone,
        their channel), and its outcome reaches their conversation with their next turn."""
        if decision.verdict is Verdict.EDIT:
            return self.lines.approval_edit_not_yours

        def theirs(requester: User) -> ToolExecutionContext:
            return replace(ctx.tool_ctx, user_id=requester.id, timezone=requester.timezone,
                           channel=requester.preferred_channel or ctx.tool_ctx.channel)

        done = await decide_on_behalf(self.flow, self.users, approval,
                                      approve=decision.verdict is Verdict.APPROVE, by=by,
                                      context_for=theirs)
        if done.result is Behalf.ALREADY:
            return fill(self.lines.approval_already, summary=approval.summary, state=done.said)
        if done.result is Behalf.CANCELLED:
            return fill(self.lines.approval_cancelled_for, summary=approval.summary,
                        user=approval.user_id)
        if done.result is Behalf.GONE:
            return fill(self.lines.approval_requester_gone, user=approval.user_id)
        return fill(self.lines.approval_approved_for, summary=approval.summary,
                    user=approval.user_id, outcome=done.said)

    async def _edit(self, ctx: TurnContext, approval: ApprovalRequest, changes: str, by: str
                    ) -> ApprovalRequest | str:
        """A change: a new approval bound to the new arguments, shown for a yes of its own (an
        edit never approves). Returns the new request, or what to say."""
        flow = self.flow
        tool = flow.registry.get(approval.tool_name)
        if tool is None or not approval.allow_modification:
            return fill(self.lines.approval_cannot_change, summary=approval.summary)
        try:
            arguments = tool.validated(await self._rewrite(tool, approval, changes),
                                       ctx.tool_ctx)
            if tool.prepare is not None:  # completed again, as for the first request
                arguments = await tool.prepare(arguments, ctx.tool_ctx.for_call(
                    approval.call_id, tool.settings))
        except (ValueError, LLMError) as err:
            return fill(self.lines.approval_change_failed, summary=approval.summary,
                        error=err)
        now = flow.clock.now()
        if not await self.store.decide(approval.id, ApprovalStatus.SUPERSEDED, by=by, at=now):
            return self._already(approval)
        summary, details = describe(tool, arguments)  # the card reads as the first one did
        summary = await named_summary(tool, arguments, ctx.tool_ctx) or summary
        edited = await self.store.create(
            user_id=ctx.user.id, call_id=approval.call_id, tool_name=tool.name,
            arguments=arguments, summary=summary, details=details, at=now,
            replaces=approval.id, turn_id=ctx.turn_id, source=approval.source,
            trigger_task_id=approval.trigger_task_id)
        return edited

    async def _rewrite(self, tool: Tool, approval: ApprovalRequest, changes: str
                       ) -> dict[str, Any]:
        prompt = (
            f"Tool: {tool.name}: {tool.description}\nParameters (JSON schema): "
            f"{json.dumps(tool.parameters_schema())}\nCurrent arguments: "
            f"{json.dumps(approval.arguments, default=str)}\nThe user asked for this change: "
            f"{json.dumps(changes)}\n\nReply with the complete new arguments as one JSON "
            "object and nothing else. Change only what the user asked for.")
        response = await self.flow.llm.complete(
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

    async def _flow_back_settled(self, ctx: TurnContext) -> Continue:
        """Approvals settled outside this turn (expired, or finished in a turn that was cut
        short) join it as the calls' outcomes, once. The person hears of an expiry here
        unless the sweeper told them already."""
        now = self.flow.clock.now()
        expired_now = {a.id for a in await self.store.expire_due(now, ctx.user.id)}
        joined: list[Joined] = []
        notices: list[str] = []
        settled: list[str] = []
        for approval in await self.store.unreported(ctx.user.id):
            if approval.status is ApprovalStatus.EXPIRED:
                content = (f"Not run: the user did not approve “{approval.summary}” in time; "
                           "the request expired.")
                if approval.id in expired_now:
                    notices.append(self.flow.expired_line(approval))
            else:
                content = approval.result or f"Request {self._state(approval)}."
            # Keyed by the outcome too: a correction (executed, then its message did not go)
            # joins as a call of its own, never a second result of the first.
            joined.append(_joined(approval, approval.arguments, content,
                                  outcome=approval.status.value))
            settled.append(approval.id)
        return Continue(joined=tuple(joined), notices=tuple(notices), settled=tuple(settled))


def _joined(approval: ApprovalRequest, arguments: dict[str, Any], content: str, *,
            outcome: str = "") -> Joined:
    """The approval's outcome as a fresh call; its id carries the approval id (and the
    outcome, when it flows back later), so each call keeps its one result."""
    suffix = f"_{outcome}" if outcome else ""
    return Joined(f"call_approval_{approval.id}{suffix}", approval.tool_name, arguments,
                  content)
