"""Usage: what each person spent today and this month against their daily budget (the
figures /usage and `valet budget list` show, each person's days in their own timezone), with
a button that raises today's budget for someone at it (their waiting messages then go on);
then the month's LLM tokens (prompt and completion) and requests by person and day, what each
channel that charges counted (SMS: segments; its spec's `usage`) and an estimate of what
that cost, with server-drawn charts (days in the deployment's `timezone`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console, back
from bot.app.console.render import Series, bar_chart
from bot.budget import dollars
from bot.contracts.people import User
from bot.gateway.budget import Figures, figures, raise_today
from bot.people.console_login import ConsoleSession
from bot.turn.usage import UsageStore
from channels.registry import specs
from channels.spec import ChannelSpec, Usage

PAGE = "/console/usage"


@dataclass
class Totals:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_requests: int = 0
    turns: int = 0
    units: dict[str, int] = field(default_factory=dict)  # a charging channel's, by channel

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

    def add(self, user_id: str, day: date, *, units: tuple[str, int] | None = None,
            **amounts: int) -> None:
        """Add to each total it counts in; `units`: (channel, how many) of a channel's."""
        for totals in (self.by_day.setdefault(day, Totals()),
                       self.by_person.setdefault(user_id, Totals()),
                       self.by_person_day.setdefault((user_id, day), Totals()), self.total):
            for name, amount in amounts.items():
                setattr(totals, name, getattr(totals, name) + amount)
            if units is not None:
                channel, count = units
                totals.units[channel] = totals.units.get(channel, 0) + count


@dataclass(frozen=True)
class Metered:
    """A channel that charges per message, as the page shows it."""

    name: str  # "sms"
    title: str  # "SMS"
    usage: Usage
    price: float  # one unit's default price (an estimate)
    chart: str = ""


def metered(console: Console) -> list[Metered]:
    return [Metered(spec.name, spec.title, usage, usage.price(console.settings))
            for spec in _charging(console) if (usage := spec.usage) is not None]


def _charging(console: Console) -> list[ChannelSpec]:
    return [spec for spec in specs(console.settings) if spec.usage is not None]


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
    for spec in _charging(console):
        assert spec.usage is not None
        counted = await spec.usage.daily(console.app.db, start, end, zone_name)
        for (user_id, day), count in counted.items():
            month.add(user_id, day, units=(spec.name, count))
    return month


@dataclass(frozen=True)
class Spent:
    """One person's line of the budget table."""

    user: User
    figures: Figures

    def money(self, amount: int | None) -> str:
        return "none" if amount is None else dollars(amount)


async def spent_by_person(console: Console) -> list[Spent]:
    gate = console.app.budget
    if gate is None:
        return []
    now = console.now()
    return [Spent(user, await figures(gate.spending, gate.budget, user, now, gate.inbox))
            for user in (await console.people()).values()]


def routes(console: Console) -> list[web.RouteDef]:
    async def raise_budget(request: web.Request, session: ConsoleSession
                              ) -> web.StreamResponse:
        gate = console.app.budget
        user = await console.app.users.get(request.match_info["user"])
        if gate is None or user is None:
            raise back(PAGE, "No such person.", failed=True)
        added = await raise_today(gate.spending, gate.budget, user, console.now())
        name = await console.app.identities.name_of(user)
        if not added:
            said = f"{name} has no daily allowance to raise."
            await console.record(request, session, "raise allowance", user.id, said)
            raise back(PAGE, said, failed=True)
        freed = await console.app.release_held()
        said = (f"Raised today's allowance of {name} by "
                f"{dollars(added)}" + (": their waiting messages go on." if user.id in freed
                                        else "."))
        await console.record(request, session, "raise allowance", user.id, said)
        raise back(PAGE, said)

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
        charging = [replace(m, chart=bar_chart(
            f"{m.usage.unit} per day, {first:%B %Y}", labels,
            [Series(m.usage.unit, "segments",
                    [month.by_day.get(d, empty).units.get(m.name, 0) for d in month.days])]))
            for m in metered(console)]
        previous = (first - timedelta(days=1)).replace(day=1)
        return console.page(
            request, session, "usage.html", title="Usage", month=month,
            people=await console.people(), tokens_chart=tokens, metered=charging,
            currency=console.settings.console.currency,
            previous=f"{previous:%Y-%m}", following=f"{next_month(first):%Y-%m}",
            is_current=first == today.replace(day=1), spent=await spent_by_person(console))

    return [web.get(PAGE, owner_only(console, page)),
            web.post(PAGE + "/{user}/raise", owner_only(console, raise_budget))]
