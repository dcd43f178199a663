"""What every console page uses: the App's parts, the sign-in store, the templates, and the
helpers that render a page, record an action and say how it went."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from bot.app.channels import ServedChannel
from bot.app.console.errors import RecentErrors
from bot.app.console.render import Templates, html
from bot.app.root import App
from bot.config import Settings
from bot.contracts.people import User
from bot.people.console_login import ConsoleLogins, ConsoleSession

log = logging.getLogger("bot.app.console")

NAV = (("/console", "Overview"), ("/console/approvals", "Approvals"),
       ("/console/tasks", "Tasks"), ("/console/usage", "Usage"),
       ("/console/outbox", "Outbox"), ("/console/people", "People"),
       ("/console/health", "Health"))


@dataclass
class Console:
    app: App
    channels: Sequence[ServedChannel]
    logins: ConsoleLogins
    templates: Templates = field(default_factory=Templates)
    errors: RecentErrors = field(default_factory=RecentErrors)

    @property
    def settings(self) -> Settings:
        return self.app.settings

    def now(self) -> datetime:
        return self.app.clock.now()

    async def people(self) -> dict[str, User]:
        return {u.id: u for u in await self.app.users.list()}

    def page(self, request: web.Request, session: ConsoleSession | None, template: str, *,
             title: str, status: int = 200, **values: Any) -> web.Response:
        return html(self.templates.render(
            template, title=title, nav=NAV, here=request.path,
            csrf=session.csrf if session else "", said=request.query.get("said", ""),
            failed=request.query.get("failed", "") == "1", signed_in=session is not None,
            deployment_zone=self.settings.timezone, **values), status)

    async def record(self, request: web.Request, session: ConsoleSession, action: str,
                     target: str, outcome: str) -> None:
        """Every action: who (the session), when, what, on what, and how it went."""
        remote = request.remote or ""
        await self.logins.record(self.now(), session.user_id, session.short, action, target,
                                 outcome, remote)
        log.info("console: %s (session %s, %s) %s %s: %s", session.user_id, session.short,
                 remote, action, target, outcome)


def back(page: str, said: str, *, failed: bool = False) -> web.HTTPSeeOther:
    """After an action: the page again (a reload posts nothing twice), saying what happened."""
    query = {"said": said, **({"failed": "1"} if failed else {})}
    return web.HTTPSeeOther(f"{page}?{urlencode(query)}")
