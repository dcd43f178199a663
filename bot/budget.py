"""What each person costs a day, in US dollars, and the budget that bounds it.

- `Prices`: per model, dollars per million input, cached-input and output tokens
  (`llm.prices`); a model not listed costs nothing.
- The payer: whose work the running code does, a context variable the gateway sets around each
  turn (`paying_for`). Every priced LLM call made in it (the loop, the fallback models, a
  sub-task, the shortening pass, reading an approval reply, the memory extraction the turn
  started) is added to that person's day by `PricedLLM` (bot.meter.llm) as it returns: a
  call is paid when it is made, so a turn redone from its journal (which makes no new calls)
  adds nothing twice.
- Messages: the meter (bot.meter.gate) adds a message's price before it goes, for a channel
  that charges per message (SMS: its segments at `sms.price_per_segment`).
- `Spending`: the `daily_spend` table, one row per person and day (their own timezone's day),
  in millionths of a dollar (sums stay exact): what the LLM and the messages sent cost, and
  what the owner added to that day's budget.
- `Budget`: what a person may spend today: `budget.daily_usd` for everyone but the owner
  (the owner: `budget.owner_daily_usd`, none by default), plus the day's raises.

A person's row is read at the start of a turn with their last 24 hours from the meter's
ledger (`SPEND_COLUMNS`, bot.people.users), so checking the budget costs the turn no
statement. The budget holds that window, not this report by day: bot.meter.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.contracts.people import DaySpend
from bot.db import Database, Row
from bot.llm.port import TokenUsage

log = logging.getLogger(__name__)

MICROS = 1_000_000  # millionths of a dollar in a dollar


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float
    cached_input: float | None = None  # None: the input price

    def cost(self, usage: TokenUsage) -> float:
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((usage.input_tokens - cached) * self.input + cached * cached_price
                + usage.output_tokens * self.output) / 1_000_000


@dataclass(frozen=True)
class Prices:
    by_model: Mapping[str, Price]

    def cost(self, model: str, usage: TokenUsage) -> float:
        price = self.by_model.get(model)
        return price.cost(usage) if price is not None else 0.0


def micros(usd: float) -> int:
    return round(usd * MICROS)


def dollars(amount: int) -> str:
    """$0.52: what a person and the owner read, in the reader's locale (0,52 $ in German)."""
    from persona.spoken import spoken_money  # Babel: loaded when first said

    return spoken_money(amount / MICROS)


def local_day(timezone: str, at: datetime) -> str:
    """The day it is at `at` where the person lives, as stored (YYYY-MM-DD)."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    return at.astimezone(zone).date().isoformat()


# --- the payer ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Payer:
    user_id: str
    timezone: str
    is_owner: bool = False


_payer: ContextVar[Payer | None] = ContextVar("valet_payer", default=None)


@contextmanager
def paying_for(user_id: str, timezone: str, is_owner: bool = False) -> Iterator[None]:
    """LLM calls made in here (and in tasks started in here) are this person's."""
    token = _payer.set(Payer(user_id, timezone, is_owner))
    try:
        yield
    finally:
        _payer.reset(token)


def payer() -> Payer | None:
    return _payer.get()


# --- the ledger --------------------------------------------------------------------------


# What a person spent in the last 24 hours (the meter's ledger, bot.meter.ledger: the window
# their budget holds), read with their row at the start of a turn ($1: the person's id, $2:
# 24 hours ago): the budget is checked without a statement of its own.
SPEND_COLUMNS = "".join(
    f", (SELECT COALESCE(SUM({column}), 0) FROM meter_ledger WHERE user_id = $1 AND at > $2)"
    f" AS {name}" for name, column in (("spend_llm", "llm_micros"),
                                        ("spend_messages", "messages_micros"),
                                        ("spend_raised", "raised_micros"))) + (
    ", (SELECT worst_micros FROM meter_ledger WHERE user_id = $1 AND at > $2"
    " AND kind = 'refused' ORDER BY at DESC, id DESC LIMIT 1) AS spend_refused")


def latest_spend(row: Row) -> DaySpend | None:
    """The last 24 hours from a row read with SPEND_COLUMNS (None: not read so)."""
    if "spend_llm" not in row:
        return None
    return DaySpend("last 24 hours", int(row["spend_llm"] or 0),
                    int(row["spend_messages"] or 0), int(row["spend_raised"] or 0),
                    int(row["spend_refused"] or 0))


class Spending:
    """The report by day (`daily_spend`): /usage's month, `valet budget`, the console. What
    the budget holds is the meter's ledger beside it (bot.meter.ledger)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, user_id: str, day: str, *, llm: int = 0, messages: int = 0,
                  raised: int = 0) -> None:
        if not (llm or messages or raised):
            return
        await self.db.execute(
            "INSERT INTO daily_spend (user_id, day, llm_micros, messages_micros, raised_micros)"
            " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id, day) DO UPDATE SET"
            " llm_micros = daily_spend.llm_micros + excluded.llm_micros,"
            " messages_micros = daily_spend.messages_micros + excluded.messages_micros,"
            " raised_micros = daily_spend.raised_micros + excluded.raised_micros",
            user_id, day, llm, messages, raised)

    async def day(self, user_id: str, day: str) -> DaySpend:
        row = await self.db.fetchrow(
            "SELECT llm_micros, messages_micros, raised_micros FROM daily_spend"
            " WHERE user_id = $1 AND day = $2", user_id, day)
        if row is None:
            return DaySpend(day)
        return DaySpend(day, int(row["llm_micros"]), int(row["messages_micros"]),
                        int(row["raised_micros"]))

    async def month(self, user_id: str, day: str) -> DaySpend:
        """The month of `day` (YYYY-MM-DD) up to now, added up."""
        row = await self.db.fetchrow(
            "SELECT COALESCE(SUM(llm_micros), 0) AS llm,"
            " COALESCE(SUM(messages_micros), 0) AS messages,"
            " COALESCE(SUM(raised_micros), 0) AS raised FROM daily_spend"
            " WHERE user_id = $1 AND day >= $2 AND day <= $3",
            user_id, day[:8] + "01", day)
        assert row is not None
        return DaySpend(day[:7], int(row["llm"]), int(row["messages"]), int(row["raised"]))


@dataclass(frozen=True)
class Budget:
    """What a person may spend a day, in millionths of a dollar (None: no limit)."""

    others: int | None
    owner: int | None = None

    @classmethod
    def from_usd(cls, daily_usd: float, owner_daily_usd: float | None) -> Budget:
        """`budget.daily_usd` (0: no limit) and `budget.owner_daily_usd` (None: none)."""
        return cls(others=micros(daily_usd) if daily_usd > 0 else None,
                   owner=micros(owner_daily_usd) if owner_daily_usd else None)

    def base(self, is_owner: bool) -> int | None:
        return self.owner if is_owner else self.others

    def today(self, is_owner: bool, spent: DaySpend) -> int | None:
        base = self.base(is_owner)
        return None if base is None else base + spent.raised


# --- the LLM, priced ----------------------------------------------------------------------
