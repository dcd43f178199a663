"""The web console over real HTTP (aiohttp's test client on `valet serve`'s web app), signed in
the way the owner is: a /console link from their chat, opened and used."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from bot.app.serve import build_web_app
from bot.contracts.envelopes import Inbound

LINK = re.compile(r"(/console/login\?t=[\w-]+)")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def say(app: Any, user: str, text: str, *, channel: str = "console", address: str = "local"):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel=channel, text=text, address=address,
        received_at=datetime(2026, 1, 5, 9, tzinfo=UTC)))


async def console_client(app: Any) -> TestClient:
    client = TestClient(TestServer(build_web_app(app, [], env={})))
    await client.start_server()
    return client


async def link_for_owner(app: Any) -> str:
    """The path of a fresh sign-in link, asked for with /console in the owner's chat."""
    owner = await app.ensure_owner()
    reply = await say(app, owner.id, "/console")
    found = LINK.search(reply.text)
    assert found, reply.text
    return found.group(1)


async def sign_in(client: TestClient, app: Any) -> str:
    """Signs the client in; returns the session's CSRF token (from a page's form)."""
    path = await link_for_owner(app)
    page = await client.get(path)
    assert page.status == 200, await page.text()
    token = path.split("t=", 1)[1]
    response = await client.post("/console/login", data={"t": token}, allow_redirects=False)
    assert response.status == 303, await response.text()
    return await csrf_of(client)


async def csrf_of(client: TestClient, path: str = "/console") -> str:
    page = await client.get(path)
    assert page.status == 200
    found = CSRF.search(await page.text())
    assert found
    return found.group(1)
