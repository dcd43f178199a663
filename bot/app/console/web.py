"""The console's routes on `valet serve`'s HTTP server (none when `console.enabled` is
false), and its static files (served by Valet itself: nothing comes from elsewhere)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

from aiohttp import web

from bot.app.channels import ServedChannel
from bot.app.console import (
    auth,
    pages_approvals,
    pages_health,
    pages_outbox,
    pages_overview,
    pages_people,
    pages_tasks,
    pages_usage,
)
from bot.app.console.deps import Console
from bot.app.console.render import SECURITY_HEADERS
from bot.app.root import App
from bot.people.console_login import ConsoleLogins

STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}


def build_console(app: App, channels: Sequence[ServedChannel]) -> Console:
    return Console(app, channels, ConsoleLogins(app.db))


def console_routes(console: Console) -> list[web.RouteDef]:
    """Every console route: sign-in, the pages and their actions, the static files."""
    routes = [*auth.login_routes(console)]
    for pages in (pages_overview, pages_approvals, pages_tasks, pages_usage, pages_outbox,
                  pages_people, pages_health):
        routes += pages.routes(console)
    return [*routes, *static_routes()]


def static_routes() -> list[web.RouteDef]:
    folder = resources.files("bot.app.console") / "static"
    files = {f.name: f.read_bytes() for f in folder.iterdir()
             if f.is_file() and any(f.name.endswith(s) for s in STATIC_TYPES)}

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = files.get(name)
        if body is None:
            raise web.HTTPNotFound()
        kind = next(t for s, t in STATIC_TYPES.items() if name.endswith(s))
        headers = {**SECURITY_HEADERS, "Cache-Control": "max-age=3600"}
        return web.Response(body=body, content_type=kind, headers=headers)

    return [web.get("/console/static/{name}", static)]


def add_console(web_app: web.Application, app: App,
                channels: Sequence[ServedChannel]) -> Console | None:
    """The console on `web_app` when it is enabled; its error log is kept while it runs."""
    if not app.settings.console.enabled:
        return None
    console = build_console(app, channels)
    web_app.router.add_routes(console_routes(console))
    console.errors.attach()

    async def detach(_: web.Application) -> None:
        console.errors.detach()

    web_app.on_cleanup.append(detach)
    return console
