"""`POST /events`: events from outside (a mail hook, a home automation) onto the bus.

Bearer token from VALET_EVENTS_TOKEN, compared in constant time. No token configured, no token
sent, a wrong one: 401 and nothing is stored. The body is a JSON object (at most 64 KB, 32
deep, arriving within `http.body_timeout_seconds`; bot.plumbing.request_body): {"source", "type",
"data", optional "id" (a sender's retry with the same id stores and runs nothing twice)}.
Anything else gets a 4xx naming what is wrong. 202 comes only once the event is stored (the
stored bus: triggers.event_store), so an acknowledged event runs even if the process dies
right after. While the database cannot be reached the event is kept in the spool
(bot.plumbing.spool) with its id (the sender's, or one made now) and answered 202 as well; it is
stored once the
database is back, once (the id is unique)."""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from bot.plumbing.request_body import BodyError, BodyLimits, read_json_object, refused
from bot.plumbing.spool import Spool, store_or_keep
from triggers.events import Event, EventBus

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024
EVENT_KIND = "events"  # an event in the spool
_NAME = r"^[\w.\-:*]{1,100}$"


def events_app(bus: EventBus, token: str | None,
               limits: BodyLimits | None = None) -> web.Application:
    """A sub-application with POST /events; mount it on `valet serve`'s app at "/"
    (app.add_subapp is for prefixes: use `app.router.add_routes(events_routes(...))`)."""
    sub = web.Application(client_max_size=MAX_BODY)
    sub.router.add_routes(events_routes(bus, token, limits))
    return sub


def events_routes(bus: EventBus, token: str | None,
                  limits: BodyLimits | None = None,
                  spool: Spool | None = None) -> list[web.RouteDef]:
    expected = f"Bearer {token}".encode() if token else None
    body_limits = limits or BodyLimits(max_bytes=MAX_BODY)

    async def store(event: Event) -> bool:
        return await bus.publish(event)

    async def replay(kept: Mapping[str, Any], at: datetime) -> None:
        await store(_event(kept, at))

    if spool is not None:
        spool.replays(EVENT_KIND, replay)

    async def post_event(request: web.Request) -> web.Response:
        given = request.headers.get("Authorization", "").encode()
        if expected is None or not hmac.compare_digest(given, expected):
            return web.json_response({"error": "unauthorized"}, status=401)
        try:
            body = await read_json_object(request, body_limits)
            problem = _problem(body)
            if problem:
                raise BodyError(400, problem)
        except BodyError as err:
            return refused(request, err, json_reply=True)
        event = _event(body, None)  # received now, as the bus's clock says
        stored: list[bool] = []

        async def publish() -> None:
            stored.append(await store(event))  # durable before the answer

        kept = await store_or_keep(spool, EVENT_KIND, {
            "source": event.source, "type": event.type, "data": dict(event.data),
            "id": event.id}, datetime.now(UTC), publish)
        answer: dict[str, object] = {"id": event.id}
        if not kept and not all(stored):
            answer["duplicate"] = True  # stored before: it runs once
        return web.json_response(answer, status=202)

    return [web.post("/events", post_event)]


def _event(body: Mapping[str, Any], at: datetime | None) -> Event:
    event = Event(source=body["source"], type=body["type"], data=body.get("data") or {},
                  at=at)
    return replace(event, id=str(body["id"])) if body.get("id") else event


def _problem(body: dict[str, object]) -> str | None:
    for key in ("source", "type"):
        value = body.get(key)
        if not isinstance(value, str) or not re.match(_NAME, value):
            return f"{key!r} must be a short name (letters, digits, . - _ :)"
    if not isinstance(body.get("data", {}), dict):
        return "'data' must be an object"
    if "id" in body and not (isinstance(body["id"], str | int) and len(str(body["id"])) <= 200):
        return "'id' must be a short string"
    return None
