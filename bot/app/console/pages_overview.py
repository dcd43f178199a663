"""The overview: at a glance, what waits for the owner, what runs in the next day, what the
month costs so far and what failed."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console
from bot.app.console.pages_tasks import task_row
from bot.app.console.pages_usage import metered, month_usage
from bot.people.console_login import ConsoleSession
from triggers.model import TaskStatus

AHEAD = timedelta(hours=24)


def routes(console: Console) -> list[web.RouteDef]:
    app = console.app

    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        now = console.now()
        people = await console.people()
        waiting = [a for u in people.values()
                   for a in await app.approvals.list_pending_approvals(u.id)]
        upcoming = sorted(
            (task_row(t, now) for t in await app.triggers.service.store.all()
             if t.status is TaskStatus.ACTIVE and t.next_run_at is not None
             and t.next_run_at <= now + AHEAD and t.next_run_at >= now - AHEAD),
            key=lambda row: row.task.next_run_at or now)
        today = now.astimezone(ZoneInfo(console.settings.timezone)).date()
        month = await month_usage(console, today.replace(day=1))
        dead = await app.outbound.outbox.dead_by_channel()
        return console.page(
            request, session, "overview.html", title="Overview", people=people, waiting=waiting,
            upcoming=upcoming, month=month, dead=sum(dead.values()),
            errors=len(console.errors.latest()),
            metered=metered(console), currency=console.settings.console.currency)

    return [web.get("/console", owner_only(console, page))]
