"""What `valet serve` shows an operator over HTTP: `GET /metrics` (Prometheus) and the count
of webhook requests acknowledged or rejected (a middleware, so no channel has to count).

`/metrics` is for the operator only. With VALET_METRICS_TOKEN set it needs
`Authorization: Bearer <token>`; without one it answers only a client on this machine that did
not come through a proxy (a proxy adds X-Forwarded-For), so a reverse proxy that forwarded it
by mistake still would not publish it.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.approvals.store import ApprovalStore
from bot.config import Settings
from bot.contracts.clock import Clock
from bot.db import Database
from bot.gateway.gateway import Gateway
from bot.gateway.outbound import Outbound
from bot.plumbing import logs
from bot.plumbing.metrics import Metrics, Readings, start_of_day
from bot.plumbing.outages import DATABASE, REDIS, about, recovered
from channels.registry import specs

log = logging.getLogger(__name__)

METRICS_TOKEN_ENV = "VALET_METRICS_TOKEN"
# The first path segment of a route that a sender outside calls (each channel's webhooks:
# its spec's `webhook_prefix`), and what it is counted as.
EVENTS_PREFIX = "events"
REACHABLE_SECONDS = 2.0  # a health check that waits longer says "unreachable"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Observed(Protocol):
    """What /metrics and the health checks read: every role's process has it (bot.app.root.App,
    bot.app.front.Front)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def metrics(self) -> Metrics: ...

    @property
    def outbound(self) -> Outbound: ...

    @property
    def gateway(self) -> Gateway: ...

    @property
    def approval_store(self) -> ApprovalStore: ...


async def readings(app: Observed) -> Readings:
    """What each store counts of its own rows, as of now."""
    now = app.clock.now()
    outbox = app.outbound.outbox
    channels = [reading for spec in specs(app.settings) if spec.readings is not None
                for reading in await spec.readings(app.db)]  # SMS: its segments
    return Readings(
        at=now, waiting=await outbox.waiting_by_channel(), dead=await outbox.dead_by_channel(),
        approvals=await app.approval_store.count_by_status(),
        people_today=await app.gateway.deps.inbox.people_since(
            start_of_day(now, app.settings.timezone)), channels=tuple(channels))


async def database_reachable(app: Observed) -> bool:
    """The database answers a query now (readiness, the console's Health page)."""
    try:
        async with asyncio.timeout(REACHABLE_SECONDS):
            await app.db.fetchval("SELECT 1")
    except Exception:
        log.warning("database unreachable", exc_info=True,
                    extra=about(DATABASE))  # once a minute (bot.plumbing.outages)
        return False
    recovered(DATABASE)
    return True


async def redis_reachable(app: Observed) -> bool | None:
    """Redis answers a PING now; None when this deployment has none (one process)."""
    client = getattr(app.gateway.deps.locks, "redis", None)
    if client is None:
        return None
    try:
        async with asyncio.timeout(REACHABLE_SECONDS):
            try:
                answered = bool(await client.ping())
            except RedisConnectionError:  # a pooled connection from before a restart
                answered = bool(await client.ping())
    except Exception:
        log.warning("redis unreachable", exc_info=True, extra=about(REDIS))  # once a minute
        return False
    recovered(REDIS)
    return answered


def metrics_routes(app: Observed, token: str | None) -> list[web.RouteDef]:
    """`GET /metrics` for `app` (its Metrics, and what its stores say at the scrape)."""

    async def metrics(request: web.Request) -> web.Response:
        refused = _refusal(request, token)
        if refused is not None:
            return refused
        app.metrics.refresh(await readings(app))
        return web.Response(body=app.metrics.render(),
                            headers={"Content-Type": app.metrics.content_type})

    return [web.get("/metrics", metrics)]


def _refusal(request: web.Request, token: str | None) -> web.Response | None:
    if token:
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return None
        return web.Response(status=401, text="metrics: a bearer token is required\n",
                            headers={"WWW-Authenticate": "Bearer"})
    proxied = "X-Forwarded-For" in request.headers or "Forwarded" in request.headers
    if _is_loopback(request.remote) and not proxied:
        return None
    log.warning("metrics: refused a request from %s; set %s to scrape from elsewhere",
                request.remote, METRICS_TOKEN_ENV)
    return web.Response(status=403, text=f"metrics: only from this machine unless "
                                         f"{METRICS_TOKEN_ENV} is set\n")


def _is_loopback(remote: str | None) -> bool:
    try:
        return remote is not None and ipaddress.ip_address(remote).is_loopback
    except ValueError:  # a Unix socket or an unknown peer
        return False


_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@web.middleware
async def request_ids(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every log line written while a request is handled carries its id (the proxy's
    X-Request-Id when it sent a sane one); the response says it too."""
    given = request.headers.get("X-Request-Id", "")
    rid = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
    token = logs.request_id.set(rid)
    try:
        response = await handler(request)
    finally:
        logs.request_id.reset(token)
    response.headers["X-Request-Id"] = rid
    return response


def webhook_counter(metrics: Metrics, settings: Settings) -> Middleware:
    """Every request to a webhook path counted by channel and result (2xx acknowledged, 4xx
    rejected, 5xx unavailable): each channel's (its spec's `webhook_prefix`) and /events."""
    prefixes = {spec.webhook_prefix: spec.name for spec in specs(settings)
                if spec.webhook_prefix}
    prefixes[EVENTS_PREFIX] = EVENTS_PREFIX

    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        channel = prefixes.get(request.path.strip("/").split("/", 1)[0])
        if channel is None:
            return await handler(request)
        try:
            response = await handler(request)
        except web.HTTPException as err:
            metrics.webhook(channel, err.status)
            raise
        except Exception:
            metrics.webhook(channel, 500)
            raise
        metrics.webhook(channel, response.status)
        return response

    return count
