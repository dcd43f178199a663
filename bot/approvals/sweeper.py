"""The approval sweeper: nothing waits or hangs unseen, and nothing is called done that was
not.

    expire   a pending request past its time becomes `expired`
    settle   a request whose lease lapsed (its process died) becomes `interrupted` when it had
             not started, `unknown` when it was running (it may have acted); never run again
    follow   an executed request whose effect waits in a durable record (a message in the
             outbox) becomes `failed` or `unknown` when that record says it did not go
             (bot.approvals.effects)

Each change becomes a Notice for the request's owner; an unknown outcome's notice carries the
same action as a new approval to decide (bot.approvals.retry). The composition root hands
notices to the outbound side, which delivers each once (its dedupe key), and edits the cards
they settle. The conversation hears of the same outcomes as the calls' results at the owner's
next message (`ApprovalStep` flows them back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.approvals.effects import Followed
from bot.approvals.outcomes import expired_line
from bot.contracts.approvals import ApprovalRequest

if TYPE_CHECKING:
    from bot.approvals.flow import ApprovalFlow


@dataclass(frozen=True)
class Notice:
    user_id: str
    line: str
    dedupe_key: str  # one message per request and outcome, however many sweepers saw it
    again: tuple[ApprovalRequest, ...] = ()  # offered again with the line, as cards
    corrected: tuple[str, ...] = ()  # requests whose card said otherwise before: edit again


class ApprovalSweeper:
    def __init__(self, flow: ApprovalFlow) -> None:
        self.flow = flow
        self.store = flow.store
        self.clock = flow.clock
        self.lines = flow.lines

    async def sweep(self) -> list[Notice]:
        """One pass while the service runs: expire what is due, settle lapsed leases, follow
        effects still on their way."""
        now = self.clock.now()
        expired = await self.store.expire_due(now)
        interrupted = await self.store.interrupt_lapsed(now)
        return self._expired(expired) + await self._interrupted(interrupted) + \
            await self._followed(await self.flow.effects.follow())

    async def at_startup(self, *, sole_owner: bool) -> list[Notice]:
        """Before any turn runs. `sole_owner`: this process is the only one that can hold
        leases (SQLite, whose file it has locked), so whatever is approved or executing was
        left by a dead process now, whatever its lease says. Otherwise (Postgres, other
        processes may be running actions) only lapsed leases are settled."""
        now = self.clock.now()
        interrupted = await (self.store.interrupt_all(now) if sole_owner
                             else self.store.interrupt_lapsed(now))
        return await self._interrupted(interrupted) + \
            self._expired(await self.store.expire_due(now)) + \
            await self._followed(await self.flow.effects.follow())

    def _expired(self, approvals: list[ApprovalRequest]) -> list[Notice]:
        return [Notice(a.user_id, expired_line(a, self.lines),
                       f"approval-expired:{a.id}") for a in approvals]

    async def _interrupted(self, approvals: list[ApprovalRequest]) -> list[Notice]:
        notices = []
        for approval in approvals:
            line, again = await self.flow.not_done(approval)
            notices.append(Notice(approval.user_id, line, f"approval-interrupted:{approval.id}",
                                  again=(again,) if again else ()))
        return notices

    async def _followed(self, followed: list[Followed]) -> list[Notice]:
        notices = []
        for done in followed:
            approval = done.approval
            line, again = await self.flow.not_done(approval, done.effect)
            notices.append(Notice(
                approval.user_id, "" if done.effect.told else line,
                f"approval-{approval.status.value}:{approval.id}",
                again=(again,) if again else (), corrected=(approval.id,)))
        return notices
