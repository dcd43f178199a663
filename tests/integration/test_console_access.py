"""Who gets into the web console: only the owner, through a one-time link from their own chat;
without a session every page and action answers 401; a form without its CSRF token is
refused; a used or expired link is refused; guessing is limited."""

from __future__ import annotations

import re

import pytest

from bot.app.console.web import build_console, console_routes
from bot.config.channel_sections import ConsoleSettings, HTTPSettings
from bot.people.console_login import ConsoleLogins, NotOwner
from tests.integration.console_harness import (
    console_client,
    csrf_of,
    link_for_owner,
    say,
    sign_in,
)

ON = ConsoleSettings(enabled=True)


@pytest.fixture
async def world(app_factory):
    app = await app_factory(console=ON)
    client = await console_client(app)
    yield app, client
    await client.close()


def _concrete(path: str) -> str:
    """A route's path with its placeholders filled in (a pattern's first choice)."""
    def fill(match: re.Match[str]) -> str:
        pattern = match.group(2) or ""
        if "[0-9]" in pattern:
            return "1"
        return pattern[1:].split("|")[0] if pattern else "x"

    return re.sub(r"\{(\w+)(:[^}]*)?\}", fill, path)


async def test_without_a_session_every_page_and_action_answers_401(world):
    app, client = world
    console = build_console(app, [])
    routes = [r for r in console_routes(console)
              if r.path not in ("/console/login",) and "/static/" not in r.path]
    assert len(routes) >= 14  # every page and every action was found
    for route in routes:
        path = _concrete(route.path)
        for cookie in ({}, {"valet_console": "forged"}):
            client.session.cookie_jar.clear()
            client.session.cookie_jar.update_cookies(cookie)
            response = await client.request(route.method, path, data={"csrf": "x"},
                                            allow_redirects=False)
            assert response.status == 401, (route.method, path)
            assert "not signed in" in await response.text()
    assert await ConsoleLogins(app.db).recent_actions() == []  # nothing was done


async def test_the_owners_link_signs_in_once_with_a_strict_httponly_cookie(world):
    app, client = world
    path = await link_for_owner(app)
    # Opening the link (as a chat app's preview does) uses nothing up.
    for _ in range(2):
        page = await client.get(path)
        assert page.status == 200 and "Sign in" in await page.text()
    token = path.split("t=", 1)[1]
    response = await client.post("/console/login", data={"t": token}, allow_redirects=False)
    assert response.status == 303 and response.headers["Location"] == "/console"
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # reached over plain http (localhost, an SSH tunnel)
    overview = await client.get("/console")
    assert overview.status == 200 and "Waiting for an OK" in await overview.text()
    assert overview.headers["Cache-Control"] == "no-store"
    assert "default-src 'self'" in overview.headers["Content-Security-Policy"]
    # The same link again, even from the signed-in browser: refused.
    again = await client.post("/console/login", data={"t": token}, allow_redirects=False)
    assert again.status == 403 and "already used" in await again.text()
    assert (await client.get(path)).status == 403
    [signed_in] = await ConsoleLogins(app.db).recent_actions()
    assert (signed_in.action, signed_in.user_id) == ("sign in", "owner")


async def test_an_expired_link_is_refused(world):
    app, client = world
    path = await link_for_owner(app)
    app.clock.advance(minutes=10, seconds=1)
    assert (await client.get(path)).status == 403
    response = await client.post("/console/login", data={"t": path.split("t=", 1)[1]},
                                 allow_redirects=False)
    assert response.status == 403
    assert (await client.get("/console")).status == 401


async def test_a_session_ends_when_it_expires_and_at_sign_out(world):
    app, client = world
    csrf = await sign_in(client, app)
    app.clock.advance(hours=12, seconds=1)
    assert (await client.get("/console")).status == 401
    csrf = await sign_in(client, app)
    out = await client.post("/console/logout", data={"csrf": csrf})
    assert out.status == 200 and "signed out" in await out.text()
    assert (await client.get("/console")).status == 401


async def test_a_form_post_without_the_csrf_token_is_refused(world):
    app, client = world
    owner = await app.ensure_owner()
    task = await app.triggers.service.morning_summary(
        _owner(owner), "every day at 7:30")
    await sign_in(client, app)
    for data in ({}, {"csrf": "not-the-token"}):
        response = await client.post(f"/console/tasks/{task.id}/pause", data=data,
                                     allow_redirects=False)
        assert response.status == 403
    assert (await app.triggers.service.store.get(task.id)).status.value == "active"
    csrf = await csrf_of(client)
    response = await client.post(f"/console/tasks/{task.id}/pause", data={"csrf": csrf},
                                 allow_redirects=False)
    assert response.status == 303
    assert (await app.triggers.service.store.get(task.id)).status.value == "paused"


async def test_a_non_owners_link_cannot_be_made(world):
    app, client = world
    kim = await app.users.ensure("kim", display_name="Kim", at=app.clock.now())
    reply = await say(app, kim.id, "/console")
    assert reply.text == "Only the owner can open the console."
    assert "/console/login" not in reply.text
    with pytest.raises(NotOwner):
        await ConsoleLogins(app.db).issue_link(kim, app.clock.now())
    # A link made while someone was the owner stops working when they no longer are.
    path = await link_for_owner(app)
    await app.db.execute("UPDATE users SET is_owner = 0 WHERE id = 'owner'")
    response = await client.post("/console/login", data={"t": path.split("t=", 1)[1]},
                                 allow_redirects=False)
    assert response.status == 403


async def test_the_link_never_goes_to_a_telegram_group(world):
    app, _ = world
    owner = await app.ensure_owner()
    reply = await say(app, owner.id, "/console", channel="telegram", address="-1001234")
    assert "/console/login" not in reply.text and "private chat" in reply.text


def token_of(path: str) -> str:
    return path.split("t=", 1)[1]


async def test_sign_in_attempts_are_limited_per_client_and_a_fresh_link_still_works(
        app_factory):
    """Issue 34 item 5: failed sign-ins are counted per client; past the limit that client's
    wrong links get 429, and a fresh valid link is never refused (the limit must not become
    a way to lock the owner out)."""
    app = await app_factory(console=ConsoleSettings(enabled=True, login_attempts=3))
    client = await console_client(app)
    try:
        statuses = [(await client.post("/console/login", data={"t": f"guess{i}"},
                                       allow_redirects=False)).status for i in range(5)]
        assert statuses == [403, 403, 403, 429, 429]
        path = await link_for_owner(app)
        assert (await client.get(path)).status == 200  # the page, with its button
        response = await client.post("/console/login", data={"t": token_of(path)},
                                     allow_redirects=False)
        assert response.status == 303
    finally:
        await client.close()


async def test_behind_a_trusted_proxy_each_client_is_counted_on_its_own(app_factory):
    """The test client connects from 127.0.0.1, a trusted proxy by default: X-Forwarded-For
    names the client. One client over its limit leaves another's attempts alone."""
    app = await app_factory(console=ConsoleSettings(enabled=True, login_attempts=3))
    client = await console_client(app)
    try:
        guesser = {"X-Forwarded-For": "198.51.100.7"}
        for i in range(6):
            await client.post("/console/login", data={"t": f"guess{i}"}, headers=guesser,
                              allow_redirects=False)
        over = await client.post("/console/login", data={"t": "guess"}, headers=guesser,
                                 allow_redirects=False)
        assert over.status == 429
        other = await client.post("/console/login", data={"t": "typo"},
                                  headers={"X-Forwarded-For": "203.0.113.5"},
                                  allow_redirects=False)
        assert other.status == 403
    finally:
        await client.close()


async def test_an_untrusted_peer_cannot_choose_its_address(app_factory):
    """With no trusted proxies, X-Forwarded-For is the client's own say-so: ignored."""
    app = await app_factory(console=ConsoleSettings(enabled=True, login_attempts=3),
                            http=HTTPSettings(trusted_proxies=[]))
    client = await console_client(app)
    try:
        statuses = [(await client.post("/console/login", data={"t": f"guess{i}"},
                                       headers={"X-Forwarded-For": f"192.0.2.{i}"},
                                       allow_redirects=False)).status for i in range(4)]
        assert statuses == [403, 403, 403, 429]
    finally:
        await client.close()


async def test_one_link_tried_from_many_clients_is_counted_too(app_factory):
    app = await app_factory(console=ConsoleSettings(enabled=True, login_attempts=3))
    client = await console_client(app)
    try:
        path = await link_for_owner(app)
        assert (await client.post("/console/login", data={"t": token_of(path)},
                                  allow_redirects=False)).status == 303
        statuses = [(await client.post("/console/login", data={"t": token_of(path)},
                                       headers={"X-Forwarded-For": f"192.0.2.{i}"},
                                       allow_redirects=False)).status for i in range(4)]
        assert statuses == [403, 403, 403, 429]  # a used link, replayed from everywhere
    finally:
        await client.close()


async def test_the_link_page_is_no_free_oracle(app_factory):
    """GET /console/login?t=… with a wrong link counts as an attempt."""
    app = await app_factory(console=ConsoleSettings(enabled=True, login_attempts=3))
    client = await console_client(app)
    try:
        statuses = [(await client.get(f"/console/login?t=guess{i}")).status
                    for i in range(5)]
        assert statuses == [403, 403, 403, 429, 429]
        path = await link_for_owner(app)
        assert (await client.get(path)).status == 200
    finally:
        await client.close()


async def test_the_cookie_is_secure_when_the_console_is_reached_over_https(app_factory):
    app = await app_factory(console=ConsoleSettings(enabled=True,
                                                    url="https://valet.example.com"))
    client = await console_client(app)
    try:
        path = await link_for_owner(app)
        response = await client.post("/console/login", data={"t": path.split("t=", 1)[1]},
                                     allow_redirects=False)
        assert "Secure" in response.headers["Set-Cookie"]
    finally:
        await client.close()


async def test_the_console_is_off_unless_enabled(app_factory):
    app = await app_factory()
    client = await console_client(app)
    try:
        assert (await client.get("/console")).status == 404
        assert (await client.get("/console/login?t=x")).status == 404
        owner = await app.ensure_owner()
        reply = await say(app, owner.id, "/console")
        assert "console is off" in reply.text and "/console/login" not in reply.text
    finally:
        await client.close()


def _owner(user):  # type: ignore[no-untyped-def]
    from triggers.service import Owner

    return Owner(user.id, user.timezone)


