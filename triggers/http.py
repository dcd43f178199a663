"""`POST /events`: events from outside (a mail hook, a home automation) onto the bus.

Bearer token from VALET_EVENTS_TOKEN, compared in constant time. No token configured, no token
sent, a wrong one: 401 and nothing is stored. The body is a JSON object (at most 64 KB, 32
deep, arriving within `http.body_timeout_seconds`; bot.plumbing.request_body): {"source", "type",
"data", optional "id" (a sender's retry with the same id stores and runs nothing twice)}.
Anything else gets a 4xx naming what is wrong. 202 comes only once the event is stored (the
stored bus: triggers.event_store), so an acknowledged event runs even if the process dies
right after."""

from __future__ import annotations

import hmac
import logging
import re
from dataclasses import replace

from aiohttp import web

from bot.plumbing.request_body import BodyError, BodyLimits, read_json_object, refused
from triggers.events import Event, EventBus

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024
_NAME = r"^[\w.\-:*]{1,100}$"


def events_app(bus: EventBus, token: str | None,
               limits: BodyLimits | None = None) -> web.Application:
    """A sub-application with POST /events; mount it on `valet serve`'s app at "/"
    (app.add_subapp is for prefixes: use `app.router.add_routes(events_routes(...))`)."""
    sub = web.Application(client_max_size=MAX_BODY)
    sub.router.add_routes(events_routes(bus, token, limits))
    return sub


def events_routes(bus: EventBus, token: str | None,
                  limits: BodyLimits | None = None) -> list[web.RouteDef]:
    expected = f"Bearer {token}".encode() if token else None
    body_limits = limits or BodyLimits(max_bytes=MAX_BODY)

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
        event = Event(source=body["source"], type=body["type"], data=body.get("data") or {})
        if body.get("id"):
            event = replace(event, id=str(body["id"]))
        stored = await bus.publish(event)  # durable before the answer
        answer: dict[str, object] = {"id": event.id}
        if not stored:
            answer["duplicate"] = True  # stored before: it runs once
        return web.json_response(answer, status=202)

    return [web.post("/events", post_event)]


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
