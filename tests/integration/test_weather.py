"""Weather against a fake Open-Meteo with the real response shapes."""

from __future__ import annotations

import pytest

from tests.fakes.fake_open_meteo import FakeOpenMeteo
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.test_capabilities import say, tool_results


@pytest.fixture
async def meteo():
    async with FakeOpenMeteo() as fake:
        yield fake


async def weather_app(app_factory, meteo):
    app = await app_factory(tools={"weather": {"api_url": meteo.base_url}})
    owner = await app.ensure_owner()
    return app, owner.id


async def ask(app, me, fake_llm, text: str, call: ToolCall) -> list[str]:
    """The one tool result this turn produced."""
    fake_llm.reset()
    fake_llm.script(Reply(tool_calls=[call]), Reply(content="(answer)"))
    await say(app, me, text)
    return tool_results(fake_llm.requests[-1])[-1:]


async def test_the_weather_in_a_named_city_has_now_rain_soon_and_today(app_factory, fake_llm,
                                                                       meteo):
    app, me = await weather_app(app_factory, meteo)
    [result] = await ask(app, me, fake_llm, "weather in Lyon?",
                         ToolCall("weather", {"place": "Lyon"}))
    assert result.splitlines() == [
        "Weather for Lyon, FR:",
        "Now: overcast, 4.0°C (feels 1.5°C), wind 12.2 km/h.",
        "Rain likely from 11:00 (80%).",
        "Today: light rain, 2.0-7.0°C, rain 80% (4.2 mm)."]
    forecast = meteo.requests[-1][1]
    assert forecast["latitude"] == "45.74846" and "temperature_unit" not in forecast


async def test_the_next_days_in_an_american_city_come_in_fahrenheit(app_factory, fake_llm,
                                                                    meteo):
    app, me = await weather_app(app_factory, meteo)
    [result] = await ask(app, me, fake_llm, "Austin this week?",
                         ToolCall("weather", {"place": "Austin", "days": 3}))
    assert "Now: overcast, 39.2°F (feels 34.7°F), wind 12.2 mph." in result
    assert "Tue 06 Jan: mainly clear, 37.4-48.2°F, rain 10% (0.0 in)." in result
    assert len([line for line in result.splitlines() if "rain " in line]) == 3
    assert meteo.requests[-1][1]["temperature_unit"] == "fahrenheit"


async def test_metric_when_the_user_asks_even_in_america(app_factory, fake_llm, meteo):
    app, me = await weather_app(app_factory, meteo)
    [result] = await ask(app, me, fake_llm, "Austin in celsius",
                         ToolCall("weather", {"place": "Austin", "units": "metric"}))
    assert "4.0°C" in result and "temperature_unit" not in meteo.requests[-1][1]


async def test_a_city_that_does_not_exist_is_said_plainly(app_factory, fake_llm, meteo):
    app, me = await weather_app(app_factory, meteo)
    [result] = await ask(app, me, fake_llm, "weather in Atlantis",
                         ToolCall("weather", {"place": "Atlantis"}))
    assert result.startswith("Error: no place called 'Atlantis' was found")
    assert [path for path, _ in meteo.requests] == ["/v1/search"]  # no forecast asked for


async def test_i_live_in_lyon_then_the_weather_needs_no_place(app_factory, fake_llm, meteo):
    app, me = await weather_app(app_factory, meteo)
    [before] = await ask(app, me, fake_llm, "weather?", ToolCall("weather", {}))
    assert "the user's place is not known" in before
    [saved] = await ask(app, me, fake_llm, "I live in Lyon",
                        ToolCall("set_my_place", {"place": "Lyon"}))
    assert saved == "Saved: Lyon, FR is the user's place."
    [result] = await ask(app, me, fake_llm, "weather?", ToolCall("weather", {}))
    assert result.startswith("Weather for Lyon, FR:")


async def test_the_weather_service_down_is_an_error_result_not_a_crash(app_factory, fake_llm):
    app = await app_factory(tools={"weather": {"api_url": "http://127.0.0.1:9"}})
    me = (await app.ensure_owner()).id
    [result] = await ask(app, me, fake_llm, "weather in Lyon?",
                         ToolCall("weather", {"place": "Lyon"}))
    assert result.startswith("Error: the weather service could not be reached")
