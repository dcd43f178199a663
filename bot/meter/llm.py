"""The LLM, metered: each call checked before it goes against the payer's budget for the
last 24 hours, at its worst cost, in the middle of a turn and in sub-tasks alike (every model
the app uses is wrapped: bot.app.models.priced), and its cost counted as it returns."""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bot.budget import Budget, Payer, Prices, Spending, dollars, local_day, micros, payer
from bot.contracts.clock import Clock
from bot.llm.port import LLM, LLMError, LLMResponse, Message, TextSink, TokenUsage, WrappedLLM
from bot.meter.ledger import Ledger

log = logging.getLogger(__name__)


@dataclass
class Held:
    """What each person's calls under way may still cost, in this process: one for all the
    models the app calls (the main one and its fallbacks), so calls at once add up."""

    by_person: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))


class BudgetSpent(LLMError):
    """The next LLM call, at its worst cost, would take the person past their budget for the
    last 24 hours: it is not made, and the turn stops (no retry, no fallback model:
    bot.llm.recovery.handler_for, bot.loop.fallback)."""


class PricedLLM(WrappedLLM):
    """Any `LLM`: each call checked against the payer's budget before it goes, at its worst
    cost (the prompt's tokens, estimated, plus `max_output_tokens`, at the model's price), and
    its cost added to the payer's day and ledger as it returns. Calls running at once for one
    person hold their worst cost until they return, so together they stay within it too."""

    def __init__(self, inner: LLM, prices: Prices, spending: Spending, clock: Clock, *,
                 budget: Budget | None = None, max_output_tokens: int = 1024,
                 chars_per_token: float = 4.0, held: Held | None = None) -> None:
        super().__init__(inner)
        self.held = held if held is not None else Held()
        self.prices = prices
        self.spending = spending
        self.ledger = Ledger(spending.db)
        self.clock = clock
        self.budget = budget
        self.max_output_tokens = max_output_tokens
        self.chars_per_token = chars_per_token

    def worst(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> int:
        """The most this call can cost: every prompt token (about `chars_per_token` characters
        each, the tools' schemas included) and `max_output_tokens` of answer."""
        chars = len(json.dumps(messages, default=str)) + len(json.dumps(tools or []))
        usage = TokenUsage(int(chars / self.chars_per_token) + 1, self.max_output_tokens)
        return micros(self.prices.cost(self.model, usage))

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None, *,
                       on_text: TextSink | None = None) -> LLMResponse:
        who = payer()
        held = self.worst(messages, tools) if who is not None and self.budget is not None \
            and self.budget.base(who.is_owner) is not None else 0
        if who is not None and held:
            await self._check(who, held)
        try:
            response = await self.inner.complete(messages, tools, on_text=on_text)
        finally:
            if held and who is not None:
                self.held.by_person[who.user_id] -= held
        cost = micros(self.prices.cost(self.model, response.usage)) if who else 0
        if who is not None and cost:
            now = self.clock.now()
            try:
                await self.ledger.cost(who.user_id, now, llm=cost)
                await self.spending.add(who.user_id, local_day(who.timezone, now), llm=cost)
            except Exception:  # accounting never fails the call that was made
                log.warning("the cost of an LLM call for %s was not recorded", who.user_id,
                            exc_info=True)
        return response

    async def _check(self, who: Payer, worst: int) -> None:
        assert self.budget is not None
        spent = await self.ledger.window(who.user_id, self.clock.now())
        limit = self.budget.today(who.is_owner, spent)
        if limit is not None and spent.total + self.held.by_person[who.user_id] + worst > limit:
            # Kept: the person is at their budget until such a call fits (bot.gateway.budget).
            await self.ledger.refused(who.user_id, self.clock.now(), worst)
            raise BudgetSpent(
                f"{who.user_id}: {dollars(spent.total)} spent in 24 hours; a call that may cost "
                f"{dollars(worst)} would pass the allowance of {dollars(limit)}")
        self.held.by_person[who.user_id] += worst  # (no await since the check)
