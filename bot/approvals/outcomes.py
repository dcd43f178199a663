"""What became of a request, in the words a person reads: one place for all of them.

    card_word    "Done", "Refused", "Outcome unknown"...: the settled card (an edited prompt
                 message, or the line said with the reply where the channel cannot edit),
                 the console's list, /pending's "Lately" lines
    state_word   "done", "refused: it could not be done"...: "“…” was already {state}"
    expired_line "“…” waited 30 minutes for your OK, so I didn't do it."

Only an executed request reads "Done"; refused, failed, outcome unknown and interrupted say so
everywhere (a person is never told "done" of what was not done).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

from bot.approvals.store import ApprovalStore
from bot.contracts.approvals import ApprovalRequest, ApprovalStatus
from persona.lines import ApprovalLines, fill

# Settled requests whose action was approved but not done as asked.
NOT_DONE = (ApprovalStatus.REFUSED, ApprovalStatus.FAILED, ApprovalStatus.UNKNOWN,
            ApprovalStatus.INTERRUPTED)

WAITING = "waiting"  # a request not settled yet (its card keeps its buttons)


def card_word(approval: ApprovalRequest, lines: ApprovalLines) -> str:
    """The outcome on a settled card; WAITING while it is pending, approved or running."""
    return {ApprovalStatus.EXECUTED: lines.approval_card_done,
            ApprovalStatus.REFUSED: lines.approval_card_refused,
            ApprovalStatus.FAILED: lines.approval_card_failed,
            ApprovalStatus.UNKNOWN: lines.approval_card_unknown,
            ApprovalStatus.INTERRUPTED: lines.approval_card_interrupted,
            ApprovalStatus.REJECTED: lines.approval_card_cancelled,
            ApprovalStatus.EXPIRED: lines.approval_card_expired,
            ApprovalStatus.SUPERSEDED: lines.approval_card_replaced}.get(approval.status,
                                                                         WAITING)


def card_line(approval: ApprovalRequest, lines: ApprovalLines,
              summary: str | None = None) -> str:
    """"Refused: Add “Lunch with Ana” Thu 26 Nov 13:00"."""
    return fill(lines.approval_card, outcome=card_word(approval, lines),
                summary=summary or approval.summary)


def state_word(approval: ApprovalRequest, lines: ApprovalLines,
               now: datetime | None = None) -> str:
    """What became of a request, in the words of "… was already {state}"; a request past its
    time is expired even before the sweeper has marked it so (given `now`)."""
    if approval.status is ApprovalStatus.PENDING and now is not None \
            and approval.expires_at <= now:
        return lines.approval_state_expired
    return {ApprovalStatus.APPROVED: lines.approval_state_approved,
            ApprovalStatus.EXECUTING: lines.approval_state_approved,
            ApprovalStatus.EXECUTED: lines.approval_state_done,
            ApprovalStatus.REFUSED: lines.approval_state_refused,
            ApprovalStatus.FAILED: lines.approval_state_failed,
            ApprovalStatus.UNKNOWN: lines.approval_state_unknown,
            ApprovalStatus.INTERRUPTED: lines.approval_state_interrupted,
            ApprovalStatus.REJECTED: lines.approval_state_cancelled,
            ApprovalStatus.EXPIRED: lines.approval_state_expired,
            ApprovalStatus.SUPERSEDED: lines.approval_state_replaced,
            ApprovalStatus.PENDING: lines.approval_state_waiting}[approval.status]


def expired_line(approval: ApprovalRequest, lines: ApprovalLines) -> str:
    """The persona's line, with {summary} and {minutes}."""
    minutes = int((approval.expires_at - approval.created_at).total_seconds() // 60)
    return fill(lines.approval_expired, summary=approval.summary, minutes=minutes)


def card_outcomes(store: ApprovalStore, lines: ApprovalLines
                  ) -> Callable[[Sequence[str]], Awaitable[dict[str, str]]]:
    """The prompt edits' look-up (bot.gateway.prompt_edits): each request's card word,
    WAITING while it is not settled."""

    async def outcomes(approval_ids: Sequence[str]) -> dict[str, str]:
        words = {}
        for approval_id in approval_ids:
            approval = await store.get(approval_id)
            if approval is not None:
                words[approval_id] = card_word(approval, lines)
        return words

    return outcomes
