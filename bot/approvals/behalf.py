"""A decision made for a request's person by someone else (the owner, in a chat or the console).

The same compare-and-set as the person's own tap; an approved call runs its stored arguments
once, as that person, and a turn of theirs may tell them at once what became of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from bot.approvals.flow import ApprovalFlow
from bot.approvals.outcomes import state_word
from bot.contracts.approvals import ApprovalRequest, ApprovalStatus, ExecutionOutcome
from bot.contracts.envelopes import TriggerMessage, Urgency
from bot.contracts.people import User
from bot.contracts.tool_context import ToolExecutionContext
from bot.people.users import UserStore


class Behalf(Enum):
    """What became of a decision made for the request's person by someone else (the owner,
    in a chat or from the web console)."""

    ALREADY = "already"  # decided, expired or replaced before: nothing changed
    CANCELLED = "cancelled"
    GONE = "gone"  # approved, but its person no longer exists: not run
    RAN = "ran"  # approved and run once; `execution` says how it went


@dataclass(frozen=True)
class BehalfOutcome:
    result: Behalf
    approval: ApprovalRequest
    said: str = ""  # ALREADY: the state word ("done", "expired"); RAN: what the action did
    execution: ExecutionOutcome | None = None


# What the request's conversation hears of a cancellation made for them by the owner.
CANCELLED_FOR = "The owner cancelled this action: it was not run."


async def decide_on_behalf(flow: ApprovalFlow, users: UserStore, approval: ApprovalRequest, *,
                           approve: bool, by: str,
                           context_for: Callable[[User], ToolExecutionContext]
                           ) -> BehalfOutcome:
    """Approve or cancel a person's request for them: the same compare-and-set as their own
    tap, and an approved call runs its stored arguments once, as that person
    (`context_for(requester)`). Its outcome reaches their conversation with their next turn
    (the request stays unreported until then), or at once with `telling_turn`; edit the
    prompt's message with Outbound.settle_prompts."""
    now = flow.clock.now()
    status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED
    if not await flow.store.decide(approval.id, status, by=by, at=now):
        current = await flow.store.get(approval.id) or approval
        return BehalfOutcome(Behalf.ALREADY, current, state_word(current, flow.lines, now))
    if not approve:
        await flow.store.finish_rejected(approval.id, CANCELLED_FOR)
        return BehalfOutcome(Behalf.CANCELLED, approval)
    requester = await users.get(approval.user_id)
    if requester is None:
        await flow.store.begin_execution(approval.id, now)
        await flow.store.finish(approval.id, ApprovalStatus.REFUSED,
                                "refused: the requester is gone")
        return BehalfOutcome(Behalf.GONE, approval)
    ran = await flow.execute(None, approval, context_for(requester))
    return BehalfOutcome(Behalf.RAN, approval, ran.content, ran)


def telling_turn(done: BehalfOutcome, *, decided_by: str, where: str
                 ) -> TriggerMessage | None:
    """The turn that tells a person at once what was decided for them (`where`: "from the
    web console"; `decided_by`: who decided), as a button press of their own would: it enters
    their queue (the gateway's entry by user), the decision's outcome joins it (unreported
    until then: the approvals step flows it back), and the model says it in the persona's
    voice, urgently, on their channel. The outcome is then reported: it is not mixed into
    their next request. None when nothing changed, or nobody is left to tell."""
    if done.result not in (Behalf.RAN, Behalf.CANCELLED):
        return None
    approval = done.approval
    who = "The user" if decided_by == approval.user_id else "The owner"
    verdict = "approved" if done.result is Behalf.RAN else "cancelled"
    return TriggerMessage(
        approval.user_id, key=f"decided:{approval.id}", task_id=f"approval:{approval.id}",
        urgency=Urgency.URGENT,
        text=(f"[Approval decided] {who} {verdict} the waiting request “{approval.summary}” "
              f"{where}. Tell the user what became of it."))
