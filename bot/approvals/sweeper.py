"""The approval sweeper: nothing waits or hangs unseen, and nothing is called done that was
not.

    expire   a pending request past its time becomes `expired`
    settle   a request whose lease lapsed (its process died) becomes `interrupted` when it had
             not started, `unknown` when it was running (it may have acted); never run again
    follow   an executed request whose effect waits in a durable record (a message in the
             outbox) becomes `failed` or `unknown` when that record says it did not go
             (bot.approvals.effects)

Each change becomes a Notice for the request's owner; an unknown outcome's notice carries the
same action as a new approval to decide (bot.approvals.retry). The sweeper hands its notices
to the outbound side (`NoticeDesk`), which delivers each once (its dedupe key), and edits the
cards they settle; it runs every `every` seconds in a worker (`start`, `stop`). The
conversation hears of the same outcomes as the calls' results at the owner's next message
(`ApprovalStep` flows them back).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from bot.approvals.effects import Followed
from bot.approvals.outcomes import expired_line
from bot.contracts.approvals import ApprovalRequest
from bot.contracts.envelopes import Delivery, Notification, Urgency
from bot.contracts.people import User
from bot.plumbing.background import cancel_and_wait
from persona.speaking import speaking_to

if TYPE_CHECKING:
    from bot.approvals.flow import ApprovalFlow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    user_id: str
    line: str
    dedupe_key: str  # one message per request and outcome, however many sweepers saw it
    again: tuple[ApprovalRequest, ...] = ()  # offered again with the line, as cards
    corrected: tuple[str, ...] = ()  # requests whose card said otherwise before: edit again


class NoticeDesk(Protocol):
    """How a notice reaches its person (the outbound side)."""

    async def notify(self, note: Notification) -> Delivery: ...

    async def settle_prompts(self, user_id: str, *, corrected: tuple[str, ...] = ()) -> None:
        ...


class People(Protocol):
    async def get(self, user_id: str) -> User | None: ...


class ApprovalSweeper:
    def __init__(self, flow: ApprovalFlow, desk: NoticeDesk | None = None,
                 people: People | None = None, every: float = 30.0) -> None:
        self.flow = flow
        self.store = flow.store
        self.clock = flow.clock
        self.lines = flow.lines
        self.desk = desk  # None: notices are returned, told by nobody (a bare flow in tests)
        self.people = people
        self.every = every
        self._task: asyncio.Task[None] | None = None

    async def sweep_and_tell(self) -> None:
        """One pass; owners are told without waiting for them to write (the conversation
        hears of it at their next message)."""
        await self.tell(await self.sweep())

    async def start(self, *, sole_owner: bool) -> None:
        """Settle what a dead process left (told at once), then sweep every `every` s."""
        await self.tell(await self.at_startup(sole_owner=sole_owner))
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                await self.sweep_and_tell()
            except Exception:
                log.exception("approval sweep failed; trying again")
            await asyncio.sleep(self.every)

    async def tell(self, notices: list[Notice]) -> None:
        if self.desk is None:
            return
        for notice in notices:
            if self.people is not None and await self.people.get(notice.user_id) is None:
                continue
            if notice.line or notice.again:  # with the action offered again, as a card
                await self.desk.notify(Notification(
                    notice.user_id, notice.line, notice.dedupe_key, urgency=Urgency.URGENT,
                    prompts=tuple(a.prompt(i) for i, a in enumerate(notice.again, 1))))
            await self.desk.settle_prompts(notice.user_id, corrected=notice.corrected)

    async def sweep(self) -> list[Notice]:
        """One pass while the service runs: expire what is due, settle lapsed leases, follow
        effects still on their way."""
        now = self.clock.now()
        expired = await self.store.expire_due(now)
        interrupted = await self.store.interrupt_lapsed(now)
        return await self._expired(expired) + await self._interrupted(interrupted) + \
            await self._followed(await self.flow.effects.follow(language_of=self._language))

    async def at_startup(self, *, sole_owner: bool) -> list[Notice]:
        """Before any turn runs. `sole_owner`: this process is the only one that can hold
        leases (SQLite, whose file it has locked), so whatever is approved or executing was
        left by a dead process now, whatever its lease says. Otherwise (Postgres, other
        processes may be running actions) only lapsed leases are settled."""
        now = self.clock.now()
        interrupted = await (self.store.interrupt_all(now) if sole_owner
                             else self.store.interrupt_lapsed(now))
        return await self._interrupted(interrupted) + \
            await self._expired(await self.store.expire_due(now)) + \
            await self._followed(await self.flow.effects.follow(language_of=self._language))

    async def _language(self, user_id: str) -> str | None:
        """The language its person reads (None: the persona's): a notice is composed here,
        outside any turn, so nobody else has set whom Valet is speaking to."""
        person = await self.people.get(user_id) if self.people is not None else None
        return person.language if person is not None else None

    async def _expired(self, approvals: list[ApprovalRequest]) -> list[Notice]:
        notices = []
        for approval in approvals:
            with speaking_to(await self._language(approval.user_id)):
                line = expired_line(approval, self.lines)
            notices.append(Notice(approval.user_id, line, f"approval-expired:{approval.id}"))
        return notices

    async def _interrupted(self, approvals: list[ApprovalRequest]) -> list[Notice]:
        notices = []
        for approval in approvals:
            with speaking_to(await self._language(approval.user_id)):
                line, again = await self.flow.not_done(approval)
            notices.append(Notice(approval.user_id, line, f"approval-interrupted:{approval.id}",
                                  again=(again,) if again else ()))
        return notices

    async def _followed(self, followed: list[Followed]) -> list[Notice]:
        notices = []
        for done in followed:
            approval = done.approval
            with speaking_to(await self._language(approval.user_id)):
                line, again = await self.flow.not_done(approval, done.effect)
            notices.append(Notice(
                approval.user_id, "" if done.effect.told else line,
                f"approval-{approval.status.value}:{approval.id}",
                again=(again,) if again else (), corrected=(approval.id,)))
        return notices
