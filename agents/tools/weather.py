"""Weather from Open-Meteo (no key needed): current conditions, today, the next days, and
rain in the next hours, for a named place or the person's own (set by "I live in Lyon").

Units follow the place's country (Fahrenheit, mph and inches in the few countries that use
them) unless the person asks otherwise. `VALET_WEATHER_API_URL` (or valet.yaml
tools.weather.api_url) replaces both Open-Meteo base URLs, for tests.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import aiohttp

from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.capabilities import CapabilityStatus
from bot.tools.registry import CHANGES, READS, tool

GEOCODING_URL = "https://geocoding-api.open-meteo.com"
FORECAST_URL = "https://api.open-meteo.com"
URL_ENV = "VALET_WEATHER_API_URL"
IMPERIAL_COUNTRIES = {"US", "LR", "MM"}
RAIN_HOURS = 6  # how far ahead "rain soon" looks
RAIN_LIKELY = 50  # percent

# WMO weather interpretation codes (Open-Meteo's weather_code).
CONDITIONS = {0: "clear", 1: "mainly clear", 2: "partly cloudy", 3: "overcast", 45: "fog",
              48: "freezing fog", 51: "light drizzle", 53: "drizzle", 55: "heavy drizzle",
              56: "freezing drizzle", 57: "freezing drizzle", 61: "light rain", 63: "rain",
              65: "heavy rain", 66: "freezing rain", 67: "freezing rain", 71: "light snow",
              73: "snow", 75: "heavy snow", 77: "snow grains", 80: "light showers",
              81: "showers", 82: "violent showers", 85: "snow showers", 86: "snow showers",
              95: "thunderstorm", 96: "thunderstorm with hail", 99: "thunderstorm with hail"}


class WeatherError(Exception):
    """Said to the model as the tool's error (no place found, service down)."""


@dataclass(frozen=True)
class Place:
    name: str
    country_code: str
    latitude: float
    longitude: float
    timezone: str = "auto"

    @property
    def label(self) -> str:
        return f"{self.name}, {self.country_code}" if self.country_code else self.name


class PlaceStore:
    """The person's default place, on their user row (migration 0012)."""

    def __init__(self, db: Any) -> None:
        self.db = db

    async def get(self, user_id: str) -> Place | None:
        raw = await self.db.fetchval("SELECT place FROM users WHERE id = $1", user_id)
        return Place(**json.loads(raw)) if raw else None

    async def set(self, user_id: str, place: Place) -> None:
        await self.db.execute("UPDATE users SET place = $1 WHERE id = $2",
                              json.dumps(place.__dict__), user_id)


def _bases(ctx: ToolExecutionContext) -> tuple[str, str]:
    override = ctx.settings.get("api_url") or os.environ.get(URL_ENV)
    if override:
        return str(override).rstrip("/"), str(override).rstrip("/")
    return GEOCODING_URL, FORECAST_URL


async def _get_json(http: aiohttp.ClientSession, url: str, params: dict[str, Any]) -> Any:
    try:
        async with http.get(url, params=params) as response:
            if response.status != 200:
                raise WeatherError(f"the weather service answered HTTP {response.status}")
            return await response.json(content_type=None)
    except aiohttp.ClientError as err:
        raise WeatherError(f"the weather service could not be reached ({type(err).__name__})"
                           ) from err


async def geocode(ctx: ToolExecutionContext, name: str) -> Place:
    base, _ = _bases(ctx)
    data = await _get_json(ctx.session(), f"{base}/v1/search",
                           {"name": name, "count": 1, "language": "en", "format": "json"})
    results = data.get("results") or []  # an unknown place: no `results` at all
    if not results:
        raise WeatherError(f"no place called {name!r} was found; ask the user for a nearby "
                           "town or the country")
    hit = results[0]
    return Place(str(hit["name"]), str(hit.get("country_code", "")), float(hit["latitude"]),
                 float(hit["longitude"]), str(hit.get("timezone") or "auto"))


async def _place(ctx: ToolExecutionContext, place: str | None) -> Place:
    if place and place.strip():
        return await geocode(ctx, place.strip())
    known = await PlaceStore(services_of(ctx).users.db).get(ctx.user_id)
    if known is None:
        raise WeatherError("the user's place is not known: ask where they are (and offer to "
                           "remember it with set_my_place)")
    return known


@tool(progress="checking the weather", safe_to_repeat=True, does=READS)
async def weather(ctx: ToolExecutionContext, place: str | None = None, days: int = 1,
                  units: Literal["metric", "imperial"] | None = None) -> str:
    """Current weather, today's forecast, rain in the next hours, and up to 7 more days.

    Args:
        place: A town or city; omit for the user's own place.
        days: Days of forecast, 1 (today) to 8.
        units: Only if the user asks; default follows the place's country.
    """
    days = max(1, min(days, 8))
    try:
        where = await _place(ctx, place)
        imperial = units == "imperial" or (units is None and
                                           where.country_code in IMPERIAL_COUNTRIES)
        _, base = _bases(ctx)
        params: dict[str, Any] = {
            "latitude": where.latitude, "longitude": where.longitude, "timezone": "auto",
            "forecast_days": days,
            "current": "temperature_2m,apparent_temperature,weather_code,wind_speed_10m",
            "hourly": "precipitation_probability,precipitation",
            "daily": "weather_code,temperature_2m_max,temperature_2m_min,"
                     "precipitation_probability_max,precipitation_sum"}
        if imperial:
            params.update(temperature_unit="fahrenheit", wind_speed_unit="mph",
                          precipitation_unit="inch")
        data = await _get_json(ctx.session(), f"{base}/v1/forecast", params)
        return render(where, data, imperial)
    except WeatherError as err:
        return f"Error: {err}"


@tool(progress="remembering where you live", does=CHANGES)
async def set_my_place(ctx: ToolExecutionContext, place: str) -> str:
    """Remember the user's home town for the weather ("I live in Lyon").

    Args:
        place: A town or city, with the country if ambiguous.
    """
    users = services_of(ctx).users
    try:
        found = await geocode(ctx, place)
    except WeatherError as err:
        return f"Error: {err}"
    await PlaceStore(users.db).set(ctx.user_id, found)
    return f"Saved: {found.label} is the user's place."


def render(place: Place, data: dict[str, Any], imperial: bool) -> str:
    """A few lines the model can read aloud: now, rain soon, each day."""
    deg, speed, depth = ("°F", "mph", "in") if imperial else ("°C", "km/h", "mm")
    lines = [f"Weather for {place.label}:"]
    current = data.get("current") or {}
    if current:
        lines.append(
            f"Now: {_condition(current.get('weather_code'))}, "
            f"{current.get('temperature_2m')}{deg} (feels {current.get('apparent_temperature')}"
            f"{deg}), wind {current.get('wind_speed_10m')} {speed}.")
    rain = _rain_soon(data.get("hourly") or {}, current.get("time"))
    if rain:
        lines.append(rain)
    daily = data.get("daily") or {}
    for i, day in enumerate(daily.get("time") or []):
        label = "Today" if i == 0 else f"{datetime.fromisoformat(day):%a %d %b}"
        lines.append(
            f"{label}: {_condition(_at(daily, 'weather_code', i))}, "
            f"{_at(daily, 'temperature_2m_min', i)}-{_at(daily, 'temperature_2m_max', i)}{deg}, "
            f"rain {_at(daily, 'precipitation_probability_max', i)}% "
            f"({_at(daily, 'precipitation_sum', i)} {depth}).")
    return "\n".join(lines)


def _rain_soon(hourly: dict[str, Any], now: str | None) -> str:
    times = hourly.get("time") or []
    if not times or not now:
        return ""
    hour = now[:13]  # "2026-11-23T05"
    start = next((i for i, t in enumerate(times) if t[:13] >= hour), None)
    if start is None:
        return ""
    for i in range(start, min(start + RAIN_HOURS, len(times))):
        chance = _at(hourly, "precipitation_probability", i) or 0
        amount = _at(hourly, "precipitation", i) or 0
        if chance >= RAIN_LIKELY or amount > 0:
            return f"Rain likely from {times[i][11:16]} ({chance}%)."
    return f"No rain expected in the next {RAIN_HOURS} hours."


def _at(series: dict[str, Any], key: str, i: int) -> Any:
    values = series.get(key) or []
    return values[i] if i < len(values) else None


def _condition(code: Any) -> str:
    return CONDITIONS.get(code, "unknown") if isinstance(code, int) else "unknown"


async def capability_status(settings: Any, db: Any) -> CapabilityStatus:
    """Open-Meteo needs no key: on unless turned off in valet.yaml (tools.weather.enabled)."""
    if (settings.tools.get("weather") or {}).get("enabled") is False:
        return CapabilityStatus.off("remove tools.weather.enabled: false from valet.yaml")
    return CapabilityStatus.on("Open-Meteo")
