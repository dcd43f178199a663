"""An approved action that did not happen as asked: what its person is told, and the same
action offered again when its outcome is unknown.

    told        unknown: what to check ("Ana may not have received it; ask her before I send
                it again"), in the record owner's words when it has some, else the generic
                "… was interrupted: it may or may not have happened"; failed: why
    again       unknown: a new approval for the same tool and the same stored arguments
                (`replaces` the first, source "again"), shown as a card; never run on its
                own. Once per request: a second look finds the first offer and offers nothing
                more. Only a message that came after the offer answers it in words.
"""

from __future__ import annotations

from datetime import datetime

from bot.approvals.effects import Effect
from bot.approvals.outcomes import card_line
from bot.approvals.store import ApprovalStore
from bot.contracts.approvals import ApprovalRequest, ApprovalStatus
from bot.tools.registry import ToolRegistry
from persona.lines import ApprovalLines, fill

AGAIN = "again"  # the source of a request offered again after an unknown outcome


def not_done_line(approval: ApprovalRequest, lines: ApprovalLines,
                  effect: Effect | None = None) -> str:
    """What the person is told of an approved action that did not happen as asked."""
    if effect is not None and effect.line:
        return effect.line
    if approval.status is ApprovalStatus.UNKNOWN:
        return fill(lines.approval_interrupted, summary=approval.summary)
    if approval.status is ApprovalStatus.INTERRUPTED:
        return fill(lines.approval_interrupted_before_start, summary=approval.summary)
    return card_line(approval, lines)


async def offer_again(store: ApprovalStore, registry: ToolRegistry, approval: ApprovalRequest,
                      at: datetime) -> ApprovalRequest | None:
    """A new approval for the same action, bound to the same arguments; None when its tool
    is gone or it was offered already."""
    if registry.get(approval.tool_name) is None or not approval.intact():
        return None
    if await store.retry_of(approval.id) is not None:
        return None
    return await store.create(
        user_id=approval.user_id, call_id=approval.call_id, tool_name=approval.tool_name,
        arguments=approval.arguments, summary=approval.summary, details=approval.details,
        at=at, allow_modification=approval.allow_modification, replaces=approval.id,
        source=AGAIN, trigger_task_id=approval.trigger_task_id, turn_id=approval.turn_id)


def answerable(approval: ApprovalRequest, received_at: datetime) -> bool:
    """Whether a message received then may answer this request in words. An offer made again
    answers only messages that came after it: a message redone after a crash (received
    before the offer) must never approve it unseen. A tap on its card is always its own."""
    return approval.source != AGAIN or approval.created_at <= received_at
