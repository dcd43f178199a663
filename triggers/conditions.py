"""Conditions: a registered tool polled at an interval, its result compared with a value.

The task fires on the edge (false -> true), never on the level, and not again within its
cooldown. The observed value and whether it held are stored on the task, so a restart
remembers that the condition was already true and does not fire again."""

from __future__ import annotations

import operator
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from bot.contracts.clock import Clock
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import ToolRegistry
from triggers.model import ConditionCheck, Task

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, ">": operator.gt, ">=": operator.ge,
    "<": operator.lt, "<=": operator.le,
    "contains": lambda a, b: str(b).lower() in str(a).lower(),
}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")

Checker = Callable[[Task, ConditionCheck], Awaitable[Any]]


class ConditionError(ValueError):
    """A condition that cannot be evaluated (unknown operator, no number in the result)."""


def holds(check: ConditionCheck, observed: Any) -> bool:
    compare = OPERATORS.get(check.op)
    if compare is None:
        raise ConditionError(f"unknown operator {check.op!r}; use one of {sorted(OPERATORS)}")
    want = check.value
    if check.op != "contains" and isinstance(want, int | float) and not isinstance(want, bool):
        observed = _number(observed)
    return compare(observed, want)


def _number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _NUMBER.search(str(value))
    if match is None:
        raise ConditionError(f"expected a number in the check's result, got {str(value)[:80]!r}")
    return float(match.group())


def registry_checker(registry: ToolRegistry, clock: Clock, *,
                     http: aiohttp.ClientSession | None = None, services: object = None
                     ) -> Checker:
    """Run a condition's check through the tool registry, as the task's user. A tool that
    needs approval is refused: a check must not change anything."""

    async def check(task: Task, condition: ConditionCheck) -> Any:
        found = registry.get(condition.tool)
        if found is None:
            raise ConditionError(f"unknown tool {condition.tool!r}")
        if found.requires_approval or found.is_agent:
            raise ConditionError(f"{condition.tool} cannot be a check (it needs approval or is "
                                 "an agent)")
        ctx = ToolExecutionContext(user_id=task.user_id, timezone=task.timezone, clock=clock,
                                   http=http, services=services,
                                   call_id=f"condition:{task.id}")
        return await found.invoke(found.validated(condition.arguments, ctx), ctx)

    return check
