"""Who may use the console: the owner, signed in through a one-time link.

    GET  /console/login?t=…   shows a "Sign in" button; nothing is used up yet (a chat app's
                              link preview fetches the page too)
    POST /console/login       uses the link (once, within 10 minutes) and opens a session: an
                              HttpOnly, SameSite=Strict cookie (Secure when the console is
                              reached over https)
    POST /console/logout      closes it

A GET or POST with a link that is not good (used, expired, never issued) is a failed attempt,
counted per client (its address, also behind a trusted proxy: bot/app/client_address.py) and
per link; past `console.login_attempts` in a window either is answered 429. A fresh, valid link
always signs in: someone else's guesses never lock the owner out (a link is 256 random bits,
so the count is there to keep a flood cheap and quiet, not to guard the secret).

Every other page answers 401 without a live session of a current owner, and every form post
403 without the session's CSRF token.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from aiohttp import web

from bot.app.console.deps import Console, log
from bot.contracts.people import User
from bot.people.console_login import ConsoleSession, token_hash
from bot.people.guesses import GuessLimiter, GuessVerdict
from persona.speaking import speaking_to

COOKIE = "valet_console"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A console handler gets the owner's live session with the request.
OwnerHandler = Callable[[web.Request, ConsoleSession], Awaitable[web.StreamResponse]]


def owner_only(console: Console, handler: OwnerHandler) -> Handler:
    """The handler runs only for a live session of a current owner; a form post only with
    the session's CSRF token."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        signed_in = await live_session(console, request)
        if signed_in is None:
            return console.page(request, None, "signed_out.html", title="Sign in",
                                status=401)
        session, owner = signed_in
        if request.method == "POST":
            form = await request.post()
            given = str(form.get("csrf", ""))
            if not hmac.compare_digest(given.encode(), session.csrf.encode()):
                log.warning("console: a form post without its CSRF token was refused (%s %s)",
                            request.method, request.path)
                return console.page(request, session, "message.html", title="Refused",
                                    status=403,
                                    message="This form is out of date or did not come from "
                                            "the console. Open the page again and retry.")
        with speaking_to(owner.language):  # the words pages borrow from the persona: theirs
            return await handler(request, session)

    return guarded


async def live_session(console: Console,
                       request: web.Request) -> tuple[ConsoleSession, User] | None:
    """The request's live session and its owner, if it has one."""
    token = request.cookies.get(COOKIE, "")
    if not token:
        return None
    session = await console.logins.session(token, console.now())
    if session is None:
        return None
    user = await console.app.users.get(session.user_id)
    return (session, user) if user is not None and user.is_owner and not user.blocked \
        else None


class SignInAttempts:
    """Failed sign-ins, counted per client and per link (only their hashes are kept)."""

    def __init__(self, console: Console) -> None:
        settings = console.settings.console
        self.guesses = GuessLimiter(console.app.db, settings.login_attempts,
                                    timedelta(minutes=settings.login_window_minutes))

    async def failed(self, client: str, token: str, at: datetime) -> bool:
        """Count one failed attempt; True when the client or the link is past the limit."""
        verdicts = [await self.guesses.take_try("console-login", "http", client, at)]
        if token:
            verdicts.append(await self.guesses.take_try("console-link", "http",
                                                        token_hash(token)[:32], at))
        if GuessVerdict.LAST_TRY in verdicts:  # once per window, not once per attempt
            log.warning("console: too many failed sign-ins (from %s, or with one link); "
                        "more are refused for a while", client)
        return GuessVerdict.REFUSED in verdicts


def login_routes(console: Console) -> list[web.RouteDef]:
    settings = console.settings.console
    attempts = SignInAttempts(console)

    async def refused(request: web.Request, token: str) -> web.Response:
        client = console.client(request)
        if await attempts.failed(client, token, console.now()):
            return console.page(request, None, "message.html", title="Too many attempts",
                                status=429, message="Too many sign-in attempts from here. "
                                                    "Wait a few minutes, then ask for a new "
                                                    "link.")
        log.info("console: a used, expired or unknown sign-in link from %s", client)
        return _refused(console, request)

    async def login_page(request: web.Request) -> web.Response:
        token = request.query.get("t", "")
        if not token or not await console.logins.link_waiting(token, console.now()):
            return await refused(request, token)  # an attempt too: no free oracle
        return console.page(request, None, "login.html", title="Sign in", token=token)

    async def login(request: web.Request) -> web.StreamResponse:
        now = console.now()
        form = await request.post()
        token = str(form.get("t", ""))
        # A fresh link is tried first: the limit never refuses it (see the module's note).
        user_id = await console.logins.redeem_link(token, now)
        user = await console.app.users.get(user_id) if user_id else None
        if user is None or not user.is_owner or user.blocked:
            return await refused(request, token)
        remote = console.client(request)
        session = await console.logins.open_session(
            user.id, now, timedelta(hours=settings.session_hours), remote)
        await console.record(request, session, "sign in", user.id, "ok")
        response = web.Response(status=303, headers={"Location": "/console"})
        response.set_cookie(COOKIE, session.token, path="/console", httponly=True,
                            samesite="Strict", secure=_https(console, request),
                            max_age=int(settings.session_hours * 3600))
        return response

    async def logout(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        await console.record(request, session, "sign out", session.user_id, "ok")
        await console.logins.close_session(session.token)
        response = console.page(request, None, "message.html", title="Signed out",
                                message="You are signed out. Send /console to Valet for a "
                                        "new link.")
        response.del_cookie(COOKIE, path="/console")
        return response

    return [web.get("/console/login", login_page), web.post("/console/login", login),
            web.post("/console/logout", owner_only(console, logout))]


def _refused(console: Console, request: web.Request) -> web.Response:
    return console.page(request, None, "message.html", title="Link refused", status=403,
                        message="This sign-in link was already used, has expired or is not "
                                "one of Valet's. Send /console to Valet for a new one.")


def _https(console: Console, request: web.Request) -> bool:
    return request.secure or console.settings.console_url().startswith("https://")
