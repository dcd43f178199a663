"""Usage: the month's LLM tokens (prompt and completion) and requests by person and day, SMS
segments and what they cost at the configured price per segment, with two server-drawn
charts. Days are the deployment's (its `timezone`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console
from bot.app.console.render import Series, bar_chart
from bot.people.console_login import ConsoleSession
from bot.turn.usage import UsageStore
from channels.sms.store import SmsStore

PAGE = "/console/usage"


@dataclass
class Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_requests: int = 0
    turns: int = 0
    segments: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Month:
    first: date
    days: list[date]
    by_day: dict[date, Totals] = field(default_factory=dict)
    by_person: dict[str, Totals] = field(default_factory=dict)
    by_person_day: dict[tuple[str, date], Totals] = field(default_factory=dict)
    total: Totals = field(default_factory=Totals)

    def add(self, user_id: str, day: date, **amounts: int) -> None:
        for totals in (self.by_day.setdefault(day, Totals()),
                       self.by_person.setdefault(user_id, Totals()),
                       self.by_person_day.setdefault((user_id, day), Totals()), self.total):
            for name, amount in amounts.items():
                setattr(totals, name, getattr(totals, name) + amount)


def month_of(text: str, today: date) -> date:
    """The first day of the month asked for ("2026-01"), else of this one."""
    try:
        year, month = (int(p) for p in text.split("-", 1))
        return date(year, month, 1)
    except ValueError:
        return today.replace(day=1)


def next_month(first: date) -> date:
    return (first + timedelta(days=32)).replace(day=1)


async def month_usage(console: Console, first: date) -> Month:
    zone_name = console.settings.timezone
    zone = ZoneInfo(zone_name)
    following = next_month(first)
    start = datetime.combine(first, time(0), zone).astimezone(UTC)
    end = datetime.combine(following, time(0), zone).astimezone(UTC)
    month = Month(first, [first + timedelta(days=i) for i in range((following - first).days)])
    for row in await UsageStore(console.app.db).daily(start, end, zone_name):
        month.add(row.user_id, row.day, prompt_tokens=row.prompt_tokens,
                  completion_tokens=row.completion_tokens, llm_requests=row.llm_requests,
                  turns=row.turns)
    segments = await SmsStore(console.app.db).daily_segments(start, end, zone_name)
    for (user_id, day), count in segments.items():
        month.add(user_id, day, segments=count)
    return month


def routes(console: Console) -> list[web.RouteDef]:
    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        today = console.now().astimezone(ZoneInfo(console.settings.timezone)).date()
        first = month_of(request.query.get("month", ""), today)
        month = await month_usage(console, first)
        labels = [f"{d:%d %b}" for d in month.days]
        empty = Totals()
        tokens = bar_chart(
            f"LLM tokens per day, {first:%B %Y}", labels,
            [Series("prompt", "prompt", [month.by_day.get(d, empty).prompt_tokens
                                         for d in month.days]),
             Series("completion", "completion",
                    [month.by_day.get(d, empty).completion_tokens for d in month.days])])
        sms = bar_chart(f"SMS segments per day, {first:%B %Y}", labels,
                        [Series("segments", "segments",
                                [month.by_day.get(d, empty).segments for d in month.days])])
        price = console.settings.console.sms_price_per_segment
        previous = (first - timedelta(days=1)).replace(day=1)
        return console.page(
            request, session, "usage.html", title="Usage", month=month,
            people=await console.people(),
            tokens_chart=tokens, sms_chart=sms, price=price,
            currency=console.settings.console.currency,
            previous=f"{previous:%Y-%m}", following=f"{next_month(first):%Y-%m}",
            is_current=first == today.replace(day=1))

    return [web.get(PAGE, owner_only(console, page))]
