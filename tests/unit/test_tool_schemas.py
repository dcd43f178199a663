"""@tool: schemas from type hints and docstrings, validation before the call."""

from __future__ import annotations

from typing import Literal

import pytest

from bot.contracts.clock import FakeClock
from bot.contracts.tool_context import ToolExecutionContext
from bot.llm.port import ToolCall
from bot.tools.calls import run_tool_call
from bot.tools.registry import ToolRegistry, ToolStatus, tool


@tool(progress="checking the weather")
async def weather(city: str, days: int = 1, units: Literal["metric", "imperial"] = "metric", *,
                  ctx: ToolExecutionContext) -> str:
    """Forecast for a city.

    Longer explanation that the model does not need.

    Args:
        city: City name, e.g. "Paris".
        days: How many days ahead,
            from 1 to 7.
        units: Unit system.
    """
    return f"{ctx.user_id}:{city}:{days}:{units}:{ctx.call_id}"


def test_schema_comes_from_hints_and_docstring():
    schema = weather.__valet_tool__.schema()
    fn = schema["function"]
    assert fn["name"] == "weather"
    assert fn["description"].startswith("Forecast for a city.")
    props = fn["parameters"]["properties"]
    assert props["city"] == {"type": "string", "description": 'City name, e.g. "Paris".'}
    assert props["days"]["type"] == "integer" and props["days"]["default"] == 1
    assert props["days"]["description"] == "How many days ahead, from 1 to 7."
    assert props["units"]["enum"] == ["metric", "imperial"]
    assert fn["parameters"]["required"] == ["city"]
    assert "ctx" not in props
    assert "title" not in str(schema)


async def test_arguments_are_validated_and_the_context_is_injected_per_call():
    registry = ToolRegistry([weather.__valet_tool__])
    ctx = ToolExecutionContext(user_id="alice", clock=FakeClock())
    ok = await run_tool_call(registry, ToolCall("c7", "weather", '{"city": "Oslo", "days": "3"}'),
                             ctx, timeout=1)
    assert ok.status is ToolStatus.SUCCESS and ok.content == "alice:Oslo:3:metric:c7"
    bad = await run_tool_call(registry, ToolCall("c8", "weather", '{"units": "kelvin"}'), ctx,
                              timeout=1)
    assert bad.status is ToolStatus.INVALID
    assert "city" in bad.content and "units" in bad.content


def test_sync_functions_and_duplicates_are_refused():
    with pytest.raises(TypeError):
        tool(lambda: None)
    registry = ToolRegistry([weather.__valet_tool__])
    with pytest.raises(ValueError, match="duplicate"):
        registry.add(weather.__valet_tool__)


async def test_two_users_calling_one_tool_at_once_do_not_share_state():
    registry = ToolRegistry([weather.__valet_tool__])
    import asyncio

    results = await asyncio.gather(*[
        run_tool_call(registry, ToolCall(f"c{i}", "weather", f'{{"city": "c{i}"}}'),
                      ToolExecutionContext(user_id=f"user{i}"), timeout=1) for i in range(20)])
    assert [r.content.split(":")[0] for r in results] == [f"user{i}" for i in range(20)]
