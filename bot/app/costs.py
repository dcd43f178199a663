"""The wiring of what keeps Valet's bill bounded (issue 35): what strangers may make it send
(bot.gateway.strangers), how often the owner hears of pairing requests
(bot.gateway.pairing_notices), where SMS may go at all (`sms.allowed_countries`), what each
person spends and may spend a day (bot.spend, bot.gateway.budget, /usage)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from bot.app.models import Models
from bot.clock import Clock
from bot.commands import Command
from bot.config import Settings
from bot.db import Database
from bot.gateway.budget import BudgetGate, figures
from bot.gateway.outbound import Outbound
from bot.gateway.pairing_notices import PairingNotices
from bot.gateway.strangers import StrangerLimits, StrangerReplies
from bot.phones import in_countries
from bot.spend import Allowance, Price, PricedLLM, Prices, Spending, dollars, micros
from bot.turn import TurnContext
from persona.lines import AccessLines, BudgetLines, fill


def stranger_replies(settings: Settings, db: Database) -> StrangerReplies:
    """SMS is the channel whose replies cost money: strangers' replies there are limited."""
    sms = settings.sms
    return StrangerReplies(db, {"sms": StrangerLimits(
        per_sender=timedelta(hours=sms.stranger_reply_hours),
        per_hour=sms.stranger_replies_per_hour, reachable=in_countries(settings.sms_countries()))})


def pairing_notices(settings: Settings, db: Database, clock: Clock, outbound: Outbound,
                    lines: AccessLines) -> PairingNotices:
    return PairingNotices(db, clock, outbound,
                          timedelta(minutes=settings.pairing.notice_minutes), lines)


def pairing_notice_loop_seconds(settings: Settings) -> float:
    """How often a worker looks for requests that waited for the notice window: a tenth of
    it, between 5 s and a minute."""
    return min(60.0, max(5.0, settings.pairing.notice_minutes * 6))


# --- what people spend -------------------------------------------------------------------


def priced(models: Models, settings: Settings, spending: Spending, clock: Clock) -> Models:
    """Each model's calls added to the payer's day at `llm.prices` (none listed: as it was)."""
    if not settings.llm.prices:
        return models
    prices = Prices({name: Price(p.input, p.output, p.cached_input)
                     for name, p in settings.llm.prices.items()})
    return replace(models, llm=PricedLLM(models.llm, prices, spending, clock),
                   fallbacks=tuple(replace(slot, llm=PricedLLM(slot.llm, prices, spending,
                                                               clock))
                                   for slot in models.fallbacks))


def allowance(settings: Settings) -> Allowance:
    budget = settings.budget
    return Allowance(others=micros(budget.daily_usd) if budget.daily_usd > 0 else None,
                     owner=micros(budget.owner_daily_usd) if budget.owner_daily_usd else None)


def usage_command(gate: BudgetGate, lines: BudgetLines) -> Command:
    """/usage: what the person spent today and this month, and today's allowance."""
    async def usage(ctx: TurnContext, args: list[str]) -> str:
        shown = await figures(gate.spending, gate.allowance, ctx.user, gate.clock.now())
        if shown.allowance is None:
            return fill(lines.usage_report_unlimited, today=dollars(shown.today.total),
                        month=dollars(shown.month.total))
        return fill(lines.usage_report, today=dollars(shown.today.total),
                    allowance=dollars(shown.allowance), month=dollars(shown.month.total))

    return Command("/usage", lines.about_usage, usage)
