"""`POST /events`: events from outside (a mail hook, a home automation) onto the bus.

Bearer token from VALET_EVENTS_TOKEN, compared in constant time. No token configured, no token
sent, a wrong one: 401 and nothing is stored. The body is JSON: {"source", "type", "data",
optional "id" (a sender's retry with the same id runs nothing twice)}."""

from __future__ import annotations

import hmac
import json
import logging
import re
from dataclasses import replace

from aiohttp import web

from triggers.events import Event, EventBus

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024
_NAME = r"^[\w.\-:*]{1,100}$"


def events_app(bus: EventBus, token: str | None) -> web.Application:
    """A sub-application with POST /events; mount it on `valet serve`'s app at "/"
    (app.add_subapp is for prefixes: use `app.router.add_routes(events_routes(...))`)."""
    sub = web.Application(client_max_size=MAX_BODY)
    sub.router.add_routes(events_routes(bus, token))
    return sub


def events_routes(bus: EventBus, token: str | None) -> list[web.RouteDef]:
    expected = f"Bearer {token}".encode() if token else None

    async def post_event(request: web.Request) -> web.Response:
        given = request.headers.get("Authorization", "").encode()
        if expected is None or not hmac.compare_digest(given, expected):
            return web.json_response({"error": "unauthorized"}, status=401)
        try:
            body = await request.json(loads=json.loads)
        except (ValueError, web.HTTPRequestEntityTooLarge):
            return web.json_response({"error": "the body must be a JSON object"}, status=400)
        problem = _problem(body)
        if problem:
            return web.json_response({"error": problem}, status=400)
        event = Event(source=body["source"], type=body["type"], data=body.get("data") or {})
        if body.get("id"):
            event = replace(event, id=str(body["id"]))
        await bus.publish(event)
        return web.json_response({"id": event.id}, status=202)

    return [web.post("/events", post_event)]


def _problem(body: object) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    for key in ("source", "type"):
        if not isinstance(body.get(key), str) or not re.match(_NAME, body[key]):
            return f"{key!r} must be a short name (letters, digits, . - _ :)"
    if not isinstance(body.get("data", {}), dict):
        return "'data' must be an object"
    if "id" in body and not (isinstance(body["id"], str | int) and len(str(body["id"])) <= 200):
        return "'id' must be a short string"
    return None
