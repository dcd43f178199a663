"""The wiring of what keeps Valet's bill bounded (issue 35): what strangers may make it send
(bot.people.strangers), how often the owner hears of pairing requests
(bot.gateway.pairing_notices), where SMS may go at all (`sms.allowed_countries`), what each
person spends and may spend a day (bot.budget, bot.gateway.budget, /usage)."""

from __future__ import annotations

from datetime import timedelta

from bot.app.base import Base
from bot.app.stores import Stores
from bot.budget import Budget, dollars
from bot.config import Settings
from bot.contracts.clock import Clock
from bot.contracts.turn import TurnContext
from bot.db import Database
from bot.gateway.budget import BudgetGate, figures
from bot.gateway.outbound import Outbound
from bot.gateway.pairing_notices import PairingNotices
from bot.turn.commands import Command
from persona.lines import fill
from persona.lines_people import AccessLines, BudgetLines


def pairing_notices(settings: Settings, db: Database, clock: Clock, outbound: Outbound,
                    lines: AccessLines) -> PairingNotices:
    return PairingNotices(db, clock, outbound,
                          timedelta(minutes=settings.pairing.notice_minutes), lines)


def pairing_notice_loop_seconds(settings: Settings) -> float:
    """How often a worker looks for requests that waited for the notice window: a tenth of
    it, between 5 s and a minute."""
    return min(60.0, max(5.0, settings.pairing.notice_minutes * 6))


# --- what people spend -------------------------------------------------------------------


def budget_from(settings: Settings) -> Budget:
    return Budget.from_usd(settings.budget.daily_usd, settings.budget.owner_daily_usd)


def usage_command(gate: BudgetGate, lines: BudgetLines) -> Command:
    """/usage: what the person spent today and this month, and today's budget."""
    async def usage(ctx: TurnContext, args: list[str]) -> str:
        shown = await figures(gate.spending, gate.budget, ctx.user, gate.clock.now())
        if shown.budget is None:
            return fill(lines.usage_report_unlimited, today=dollars(shown.today.total),
                        month=dollars(shown.month.total))
        return fill(lines.usage_report, today=dollars(shown.today.total),
                    allowance=dollars(shown.budget), month=dollars(shown.month.total))

    return Command("/usage", lines.about_usage, usage)


def build_budget(base: Base, stores: Stores, outbound: Outbound) -> BudgetGate:
    """A person at today's budget: their messages wait (bot.gateway.budget)."""
    return BudgetGate(base.spending, budget_from(base.settings), stores.inbox, stores.users,
                      outbound, base.clock, base.persona.lines, stores.identities)
