"""Health: the channels, the LLM (requests and errors this process counted), the database,
Redis, the scheduler's leader, the outbox, the last errors logged and the console's own record
of actions."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console
from bot.app.observe import database_reachable, redis_reachable
from bot.people.console_login import ConsoleSession
from channels.registry import specs
from triggers.lease import DatabaseLease

PAGE = "/console/health"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not in use here
    detail: str


async def checks(console: Console) -> list[Check]:
    app = console.app
    metrics = app.metrics
    found = [Check(f"channel {c.name}", c.ready, "receiving" if c.ready else "not receiving")
             for c in console.channels]
    if not console.channels:
        titles = " or ".join(s.title for s in specs(console.settings) if s.build is not None)
        found.append(Check("channels", False, f"none configured ({titles})"))
    requests = metrics.total("valet_llm_requests")
    errors = metrics.total("valet_llm_errors")
    found.append(Check(f"LLM {app.llm.model or '(no model)'}",
                       None if not requests else errors < requests,
                       f"{requests:g} requests, {errors:g} failed since this process started"))
    database = await database_reachable(app)
    found.append(Check(f"database ({app.db.dialect})", database,
                       "answers" if database else "unreachable"))
    redis = await redis_reachable(app)
    found.append(Check("Redis", redis, "not used (one process)" if redis is None else
                       "answers" if redis else "unreachable"))
    found.append(await _scheduler(console))
    dead = await app.outbound.outbox.dead_by_channel()
    waiting = await app.outbound.outbox.waiting_by_channel()
    found.append(Check("outbox", not dead,
                       f"{sum(w.count for w in waiting.values())} waiting, "
                       f"{sum(dead.values())} dead-lettered"))
    return found


async def _scheduler(console: Console) -> Check:
    app = console.app
    if not console.settings.triggers.enabled:
        return Check("scheduler", None, "off (triggers.enabled: false)")
    engine = app.triggers.engine
    held = await DatabaseLease(app.db, engine.holder).current()
    if held is None:
        return Check("scheduler", False, "no process leads the schedule")
    holder, until = held
    alive = until > console.now()
    here = " (this process)" if holder == engine.holder else ""
    return Check("scheduler leader", alive,
                 f"{holder}{here}, lease until {until:%H:%M:%S} UTC" if alive else
                 f"{holder}'s lease lapsed at {until:%H:%M:%S} UTC")


def routes(console: Console) -> list[web.RouteDef]:
    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        return console.page(request, session, "health.html", title="Health",
                            checks=await checks(console), errors=console.errors.latest(),
                            actions=await console.logins.recent_actions())

    return [web.get(PAGE, owner_only(console, page))]
