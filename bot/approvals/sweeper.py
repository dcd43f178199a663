"""The approval sweeper: nothing waits or hangs unseen.

    expire   a pending request past its time becomes `expired`
    settle   an approved or executing request whose lease lapsed (its process died) becomes
             `failed`: "interrupted", never run again (fail closed)

Each change becomes a Notice for the request's owner; the composition root hands notices to
the gateway, which delivers each once (its dedupe key). The conversation hears of the same
outcomes as the calls' results at the owner's next message (`ApprovalFlow` flows them back).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.approvals.model import ApprovalRequest
from bot.approvals.store import INTERRUPTED, ApprovalStore
from bot.clock import Clock
from persona.lines import ApprovalLines, fill


@dataclass(frozen=True)
class Notice:
    user_id: str
    line: str
    dedupe_key: str  # one message per request and outcome, however many sweepers saw it


def interrupted_line(approval: ApprovalRequest, lines: ApprovalLines) -> str:
    template = lines.approval_interrupted if approval.result == INTERRUPTED \
        else lines.approval_interrupted_before_start
    return fill(template, summary=approval.summary)


def expired_line(approval: ApprovalRequest, lines: ApprovalLines) -> str:
    """The persona's line, with {summary} and {minutes}."""
    minutes = int((approval.expires_at - approval.created_at).total_seconds() // 60)
    return fill(lines.approval_expired, summary=approval.summary, minutes=minutes)


class ApprovalSweeper:
    def __init__(self, store: ApprovalStore, clock: Clock, *, lines: ApprovalLines) -> None:
        self.store = store
        self.clock = clock
        self.lines = lines

    async def sweep(self) -> list[Notice]:
        """One pass while the service runs: expire what is due, settle lapsed leases."""
        now = self.clock.now()
        expired = await self.store.expire_due(now)
        interrupted = await self.store.interrupt_lapsed(now)
        return self._expired(expired) + self._interrupted(interrupted)

    async def at_startup(self, *, sole_owner: bool) -> list[Notice]:
        """Before any turn runs. `sole_owner`: this process is the only one that can hold
        leases (SQLite, whose file it has locked), so whatever is approved or executing was
        left by a dead process now, whatever its lease says. Otherwise (Postgres, other
        processes may be running actions) only lapsed leases are settled."""
        now = self.clock.now()
        interrupted = await (self.store.interrupt_all(now) if sole_owner
                             else self.store.interrupt_lapsed(now))
        return self._interrupted(interrupted) + self._expired(await self.store.expire_due(now))

    def _expired(self, approvals: list[ApprovalRequest]) -> list[Notice]:
        return [Notice(a.user_id, expired_line(a, self.lines),
                       f"approval-expired:{a.id}") for a in approvals]

    def _interrupted(self, approvals: list[ApprovalRequest]) -> list[Notice]:
        return [Notice(a.user_id, interrupted_line(a, self.lines), f"approval-interrupted:{a.id}")
                for a in approvals]
