"""A fake Open-Meteo (geocoding and forecast APIs) on loopback, answering with the real
response shapes: geocoding `results` (absent for an unknown place), forecast `current`,
`hourly` and `daily` with their `*_units`.

    async with FakeOpenMeteo() as meteo:   # VALET_WEATHER_API_URL = meteo.base_url
        meteo.places["Lyon"] = {...}       # name -> a geocoding result
        meteo.requests                     # (path, query) of each request
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

LYON = {"id": 2996944, "name": "Lyon", "latitude": 45.74846, "longitude": 4.84671,
        "elevation": 173.0, "feature_code": "PPLA", "country_code": "FR",
        "admin1_id": 11071625, "timezone": "Europe/Paris", "population": 522969,
        "country_id": 3017382, "country": "France", "admin1": "Auvergne-Rhône-Alpes"}
AUSTIN = {"id": 4671654, "name": "Austin", "latitude": 30.26715, "longitude": -97.74306,
          "elevation": 149.0, "feature_code": "PPLA", "country_code": "US",
          "timezone": "America/Chicago", "population": 961855, "country": "United States",
          "admin1": "Texas"}


class FakeOpenMeteo:
    def __init__(self) -> None:
        self.places: dict[str, dict[str, Any]] = {"Lyon": LYON, "Austin": AUSTIN}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.now = "2026-01-05T09:00"  # the forecast's current time (local to the place)
        self.rain_at_hour = 11  # hourly precipitation probability 80% from this hour
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> FakeOpenMeteo:
        app = web.Application()
        app.router.add_get("/v1/search", self._search)
        app.router.add_get("/v1/forecast", self._forecast)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _search(self, request: web.Request) -> web.Response:
        self.requests.append(("/v1/search", dict(request.query)))
        hit = self.places.get(request.query.get("name", ""))
        if hit is None:  # the real API leaves `results` out entirely
            return web.json_response({"generationtime_ms": 0.4})
        return web.json_response({"results": [hit], "generationtime_ms": 0.6})

    async def _forecast(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.requests.append(("/v1/forecast", query))
        fahrenheit = query.get("temperature_unit") == "fahrenheit"

        def temp(celsius: float) -> float:
            return round(celsius * 9 / 5 + 32, 1) if fahrenheit else celsius

        days = int(query.get("forecast_days", "7"))
        day0 = self.now[:10]
        dates = [day0] + [f"{day0[:8]}{int(day0[8:]) + i:02d}" for i in range(1, days)]
        hours = [f"{d}T{h:02d}:00" for d in dates for h in range(24)]
        return web.json_response({
            "latitude": float(query["latitude"]), "longitude": float(query["longitude"]),
            "generationtime_ms": 0.1, "utc_offset_seconds": 3600, "timezone": "Europe/Paris",
            "timezone_abbreviation": "GMT+1", "elevation": 173.0,
            "current_units": {"time": "iso8601", "interval": "seconds",
                              "temperature_2m": "°F" if fahrenheit else "°C",
                              "apparent_temperature": "°F" if fahrenheit else "°C",
                              "weather_code": "wmo code", "wind_speed_10m": "km/h"},
            "current": {"time": self.now, "interval": 900, "temperature_2m": temp(4.0),
                        "apparent_temperature": temp(1.5), "weather_code": 3,
                        "wind_speed_10m": 12.2},
            "hourly_units": {"time": "iso8601", "precipitation_probability": "%",
                             "precipitation": "mm"},
            "hourly": {"time": hours,
                       "precipitation_probability": [
                           80 if int(t[11:13]) >= self.rain_at_hour and t[:10] == day0 else 5
                           for t in hours],
                       "precipitation": [0.0 for _ in hours]},
            "daily_units": {"time": "iso8601", "weather_code": "wmo code",
                            "temperature_2m_max": "°C", "temperature_2m_min": "°C",
                            "precipitation_probability_max": "%", "precipitation_sum": "mm"},
            "daily": {"time": dates, "weather_code": [61] + [1] * (days - 1),
                      "temperature_2m_max": [temp(7.0)] + [temp(9.0)] * (days - 1),
                      "temperature_2m_min": [temp(2.0)] + [temp(3.0)] * (days - 1),
                      "precipitation_probability_max": [80] + [10] * (days - 1),
                      "precipitation_sum": [4.2] + [0.0] * (days - 1)},
        })
