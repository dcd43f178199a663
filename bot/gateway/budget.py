"""A person at their budget (bot.budget, bot.meter): their messages wait, nothing is lost.

Before a turn runs, what the person spent in the last 24 hours (the meter's ledger: no
timezone change moves that window) is held against their budget; so is a turn the meter
stopped before an LLM call (bot.meter.llm). At it, the message and any others of theirs not
yet answered wait in the inbox as `held` (no turn, no LLM, no reply); they are told once in
one sentence, and the owner once. The workers look at the people who wait every
`budget.check_seconds`: once enough of their spending has left the 24 hours or the owner
raised their budget (`valet budget raise`, the console's Usage page), their messages are
`received` again, in their order, and their queue is kicked. Triggered runs that would call
the model wait the same way; a plain reminder, which calls none, is not a turn and goes; a
slash command (/usage, /help, /stop) calls no model and is handled, though its answer, like
every message, passes the meter (bot.meter.gate): at the budget, a message that costs (an
SMS) is not sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from bot.budget import Budget, Spending, dollars, local_day, micros
from bot.contracts.clock import Clock
from bot.contracts.envelopes import Notification, Urgency
from bot.contracts.people import DaySpend, User
from bot.gateway.inbox import InboxRow, InboxStore
from bot.gateway.outbound import Outbound
from bot.meter.ledger import Ledger
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.turn.commands import command_word
from persona.lines import fill
from persona.lines_people import BudgetLines
from persona.speaking import speaking_to

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Standing:
    """A person's day against their budget."""

    spent: DaySpend
    budget: int | None  # None: no limit

    @property
    def over(self) -> bool:
        """At the budget: spent, or too near it for the last call the meter refused."""
        return self.budget is not None and (
            self.spent.total >= self.budget
            or self.spent.total + self.spent.refused > self.budget)


@dataclass(frozen=True)
class Figures:
    """What /usage, `valet budget` and the console show of a person."""

    today: DaySpend
    month: DaySpend
    budget: int | None  # today's, raises included; None: no limit
    waiting: int = 0  # their messages held at the budget

    @property
    def over(self) -> bool:
        return Standing(self.today, self.budget).over


async def figures(spending: Spending, budget: Budget, user: User, at: datetime,
                  inbox: InboxStore | None = None) -> Figures:
    """`today`: the last 24 hours, the window the budget holds (bot.meter), door replies
    and commands' answers counted with the rest; `month`: the person's calendar month."""
    today = await Ledger(spending.db).window(user.id, at)
    return Figures(today, await spending.month(user.id, local_day(user.timezone, at)),
                   budget.today(user.is_owner, today),
                   await inbox.held_count(user.id) if inbox is not None else 0)


async def raise_today(spending: Spending, budget: Budget, user: User, at: datetime,
                      usd: float | None = None) -> int:
    """The owner adds to the person's budget for today (by default one more day's
    worth); what was added, in millionths of a dollar (0: the person has no budget to
    raise and no amount was given)."""
    amount = micros(usd) if usd is not None else budget.base(user.is_owner) or 0
    if amount > 0:
        await Ledger(spending.db).cost(user.id, at, raised=amount, kind="raise")
        await spending.add(user.id, local_day(user.timezone, at), raised=amount)
    return amount


class BudgetGate:
    def __init__(self, spending: Spending, budget: Budget, inbox: InboxStore,
                 users: UserStore, outbound: Outbound, clock: Clock, lines: BudgetLines,
                 identities: IdentityStore) -> None:
        self.spending = spending
        self.budget = budget
        self.inbox = inbox
        self.users = users
        self.outbound = outbound
        self.clock = clock
        self.lines = lines
        self.identities = identities  # how the owner hears of a person, and names them

    async def standing(self, user: User, at: datetime | None = None) -> Standing:
        """The last 24 hours against their budget, from the meter's ledger: a window no
        change of timezone, name or channel moves (bot.meter)."""
        at = at or self.clock.now()
        if self.budget.base(user.is_owner) is None:
            return Standing(DaySpend(local_day(user.timezone, at)), None)
        # Read with their row in a turn (bot.people.users), else from the ledger.
        spent = user.spent if user.spent is not None \
            else await Ledger(self.spending.db).window(user.id, at)
        return Standing(spent, self.budget.today(user.is_owner, spent))

    async def holds(self, row: InboxRow, user: User, *, fresh: bool = False) -> bool:
        """True when the message waits (the person is at their budget): it and the rest
        of theirs are `held`, and whoever must hear of it has. `fresh`: read the ledger again
        (a turn the meter stopped part-way: what was read with the person's row is old)."""
        if row.trigger_task_id is None and command_word(row.text) is not None:
            return False  # a command calls no model: /usage, /help, /stop still answer
        standing = await self.standing(replace(user, spent=None) if fresh else user)
        if not standing.over:
            return False
        held = await self.inbox.hold(user.id, row.id)
        log.info("%s is at today's allowance (%s of %s): %d message(s) wait", user.id,
                 dollars(standing.spent.total), dollars(standing.budget or 0), held)
        await self._tell(user, standing, row)
        return True

    async def _tell(self, user: User, standing: Standing, row: InboxRow) -> None:
        """Once a day each (the keys say which day; on SMS the meter also lets the person's
        notice out at most once in 24 hours, whatever day their timezone makes it): the
        person, then the owner."""
        day = local_day(user.timezone, self.clock.now())
        channel = row.channel if row.trigger_task_id is None else None
        with speaking_to(user.language):  # before any turn: said in their language here
            reached = self.lines.budget_reached
        await self.outbound.notify(Notification(
            user.id, reached, f"budget:{user.id}:{day}", channel=channel,
            urgency=Urgency.URGENT))
        if user.is_owner:
            return
        ids = [i for i in await self.identities.of_user(user.id) if i.channel != "console"]
        ref = f"{ids[0].channel}:{ids[0].address}" if ids else user.id  # what the CLI takes
        name = await self.identities.name_of(user)
        await self.outbound.notify_owner(  # in each owner's language
            lambda: fill(self.lines.budget_reached_owner, name=name, user=ref,
                         spent=dollars(standing.spent.total),
                         allowance=dollars(standing.budget or 0)),
            dedupe_key=f"budget:{user.id}:{day}")

    async def release(self, kick: Callable[[str], None]) -> list[str]:
        """The people whose messages waited and may go now (a new day, a raise): their rows
        are `received` again and their queues kicked."""
        freed = []
        for user_id in await self.inbox.held_people():
            user = await self.users.get(user_id)
            if user is None or (await self.standing(user)).over:
                continue
            if await self.inbox.release(user_id):
                log.info("%s may spend again: their waiting messages go on", user_id)
                freed.append(user_id)
                kick(user_id)
        return freed

    async def run(self, kick: Callable[[str], None], every_seconds: float) -> None:
        """A worker's loop: waiting messages are looked at again every so often."""
        while True:
            try:
                await self.release(kick)
            except Exception:
                log.exception("looking at messages waiting for an allowance failed")
            await asyncio.sleep(every_seconds)
