"""`valet connect calendar|email USER` and `valet credentials ...`: credentials are set from
the shell, never over chat. Passwords are read without echo (getpass); each connection is
tested before anything is stored; nothing printed carries a secret."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp

from bot.cli.person_ref import find_person
from bot.config import Settings
from bot.credentials import CredentialStore, new_key
from bot.text.redact import redact_text

Say = Callable[[str], None]


@dataclass(frozen=True)
class Prompts:
    """How the command asks: `ask` echoes, `secret` does not (swapped in tests)."""

    ask: Callable[[str], str] = input
    secret: Callable[[str], str] = getpass.getpass


def add_connect_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    connect = sub.add_parser("connect", help="connect a person's calendar or email (asks for "
                             "the password without echo, tests it, stores it encrypted)")
    connect.add_argument("service", choices=["calendar", "email"],
                         help="what to connect: calendar (CalDAV or an ICS link) or email")
    connect.add_argument("user", help="user id, or channel:address (e.g. sms:+15551234567)")
    connect.add_argument("--calendar", default="", help="CalDAV: the calendar to add events "
                         "to (default: the first)")
    creds = sub.add_parser("credentials", help="stored credentials (never shown)")
    creds_sub = creds.add_subparsers(dest="action", required=True)
    creds_sub.add_parser("list", help="who has what connected")
    creds_sub.add_parser("rotate", help="re-encrypt everything with the first key of "
                         "VALET_SECRET_KEY")
    creds_sub.add_parser("new-key", help="print a new key for VALET_SECRET_KEY")
    setter = creds_sub.add_parser("set", help="store a secret for the deployment (an MCP "
                                  "server's token: `credential:NAME` in the registry); asked "
                                  "without echo")
    setter.add_argument("service", help="the credential's name (github for credential:github)")
    setter.add_argument("field", nargs="?", default="token",
                        help="which field (default: token; credential:NAME.FIELD)")
    forget = creds_sub.add_parser("forget", help="delete a person's credential")
    forget.add_argument("user", help="user id, or channel:address")
    forget.add_argument("service", help="calendar or email")


async def run_connect(settings: Settings, args: argparse.Namespace, say: Say = print,
                      prompts: Prompts | None = None) -> int:
    from bot.app import App
    from bot.cli.admin import _NoLLM

    if args.command == "credentials" and args.action == "new-key":
        say(new_key())
        return 0
    app = await App.build(settings, llm=_NoLLM())
    try:
        store = CredentialStore.from_env(app.db, os.environ)  # a bad key: its own clear line
        if args.command == "credentials":
            return await _credentials(store, app, args, say, prompts)
        user = await find_person(app.users, app.identities, args.user)
        if user is None:
            say(f"no such user: {args.user}")
            return 1
        ask = prompts or Prompts()
        connector = CONNECTORS[args.service]
        secret = await connector(args, ask, app.http)
        if secret is None:
            return 1
        await store.put(user.id, args.service, secret, app.clock.now())
        say(f"{args.service} connected for {user.id} (stored encrypted)")
        return 0
    finally:
        await app.close()


async def _credentials(store: CredentialStore, app, args: argparse.Namespace,  # type: ignore[no-untyped-def]
                       say: Say, prompts: Prompts | None = None) -> int:
    if args.action == "list":
        for c in await store.stored():
            say(f"{c.user_id}\t{c.service}\tset {c.updated_at:%Y-%m-%d %H:%M}")
        return 0
    if args.action == "set":  # the owner's: MCP servers run for the whole deployment
        from bot.app.owner import OWNER_ID

        value = (prompts or Prompts()).secret(f"{args.service} {args.field}: ").strip()
        if not value:
            say("nothing entered; nothing stored")
            return 1
        current = await store.get(OWNER_ID, args.service) or {}
        await store.put(OWNER_ID, args.service, {**current, args.field: value},
                        app.clock.now())
        say(f"{args.service} {args.field} stored encrypted (credential:{args.service}"
            + (f".{args.field}" if args.field != "token" else "") + ")")
        return 0
    if args.action == "forget":
        found = await store.delete(args.user, args.service)
        say("deleted" if found else f"{args.user} has no {args.service} credential")
        return 0 if found else 1
    count = await store.rotate()  # CredentialsLocked: one line from the CLI
    say(f"re-encrypted {count} credential(s) with the first key; the old keys can go")
    return 0


# --- connectors: prompt, test, return the secret (None: not stored, the reason said) --------

Connector = Callable[[argparse.Namespace, Prompts, aiohttp.ClientSession],
                     Awaitable[dict[str, str] | None]]


async def connect_calendar(args: argparse.Namespace, ask: Prompts,
                           http: aiohttp.ClientSession) -> dict[str, str] | None:
    from agents.calendar.sources import CalendarAccount, CalendarError, check_connection

    try:
        url = _field(ask.ask, "Calendar URL (a CalDAV server, or an ICS subscription link): ",
                     _calendar_url_problem)
        if url.startswith("webcal://") or url.split("?")[0].endswith(".ics"):
            account = CalendarAccount("ics", url)
        else:
            username = _field(ask.ask, "Username: ", _needed("a user name"))
            account = CalendarAccount("caldav", url, username,
                                      _field(ask.secret, "Password: ", _needed("a password")),
                                      args.calendar)
    except FieldRefused as err:
        print(f"valet: {err}")
        return None
    try:
        found = await check_connection(account, http)
    except CalendarError as err:
        print(f"valet: could not connect the calendar: {err}; nothing was stored")
        return None
    print(f"connected: {found}")
    return account.secret()


async def connect_email(args: argparse.Namespace, ask: Prompts,
                        http: aiohttp.ClientSession) -> dict[str, str] | None:
    """Each field is checked as it is entered (the IMAP server must answer on its port);
    the IMAP login is tested at the end (the same check the email tools and `valet doctor`
    use); the email capability reads these fields (agents/email/account.py)."""
    from agents.email.account import MailAccount, MailError
    from agents.email.imap import check_login

    try:
        imap_host, imap_port = await _server(ask, "IMAP", "993", reachable=True)
        smtp_host, smtp_port = await _server(ask, "SMTP", "465", reachable=False)
        secret = {"imap_host": imap_host, "imap_port": imap_port, "smtp_host": smtp_host,
                  "smtp_port": smtp_port,
                  "username": _field(ask.ask, "Username: ",
                                     _needed("a user name (often your email address)"))}
        default = secret["username"] if "@" in secret["username"] else ""
        secret["address"] = _field(
            ask.ask, f"Send mail as (address) [{default}]: " if default
            else "Send mail as (address): ", _address_problem, default)
        secret["password"] = _field(ask.secret, "Password: ", _needed("a password"))
    except FieldRefused as err:
        print(f"valet: {err}")
        return None
    try:
        account = MailAccount.from_secret(secret)
        await check_login(account)
    except MailError as err:
        print(f"valet: could not connect the email account: {redact_text(str(err))}; "
              "nothing was stored")
        return None
    print(f"connected: logged in to {secret['imap_host']}; mail will be sent as "
          f"{secret['address']}")
    return secret


# --- each field checked as it is entered ----------------------------------------------------

TRIES = 3
REACH_SECONDS = 5.0
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$|^\[?[0-9A-Fa-f:.]+\]?$")
_ADDRESS = re.compile(r"^[^@\s]+@[^@\s]+$")


class FieldRefused(Exception):
    """A field got no usable answer after a few tries; nothing is stored."""


def _field(read: Callable[[str], str], prompt: str, check: Callable[[str], str | None],
           default: str = "") -> str:
    """Asked until the answer passes its check (a few times at most), each refusal said."""
    for _ in range(TRIES):
        value = read(prompt).strip() or default
        problem = check(value)
        if problem is None:
            return value
        print(f"  {problem}")
    raise FieldRefused(f"{prompt.split('(')[0].split('[')[0].strip(': ')}: no usable answer "
                       f"after {TRIES} tries; nothing was stored")


def _needed(what: str) -> Callable[[str], str | None]:
    return lambda value: None if value else f"{what} is needed"


def _host_problem(value: str) -> str | None:
    if not value:
        return "a server name is needed (e.g. imap.example.com)"
    if "://" in value:
        return "just the server's name, without the scheme (e.g. imap.example.com)"
    if not _HOST.match(value):
        return f"{value!r} is not a server name (e.g. imap.example.com)"
    return None


def _port_problem(value: str) -> str | None:
    if not value.isdigit() or not 0 < int(value) < 65536:
        return f"{value!r} is not a port (a number such as 993)"
    return None


def _address_problem(value: str) -> str | None:
    if not _ADDRESS.match(value):
        return f"{value!r} is not an email address (name@example.com)" if value else \
            "the address mail is sent as is needed (name@example.com)"
    return None


def _calendar_url_problem(value: str) -> str | None:
    if not value.startswith(("https://", "http://", "webcal://")):
        return "a calendar URL starts with https:// (or webcal:// for a subscription link)"
    return None


async def _server(ask: Prompts, kind: str, port: str, *, reachable: bool) -> tuple[str, str]:
    """A server's name and port; with `reachable`, it must answer there (a typo is caught
    now, not after the password)."""
    for _ in range(TRIES):
        host = _field(ask.ask, f"{kind} server (host): ", _host_problem)
        chosen = _field(ask.ask, f"{kind} port [{port}]: ", _port_problem, port)
        problem = await _unreachable(host, int(chosen)) if reachable else None
        if problem is None:
            return host, chosen
        print(f"  {problem}")
    raise FieldRefused(f"{kind} server: no reachable answer after {TRIES} tries; nothing was "
                       "stored")


async def _unreachable(host: str, port: int) -> str | None:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), REACH_SECONDS)
    except (OSError, TimeoutError) as err:
        reason = getattr(err, "strerror", None) or type(err).__name__
        return f"nothing answers at {host}:{port} ({reason}): check the name and the port"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


CONNECTORS: dict[str, Connector] = {"calendar": connect_calendar, "email": connect_email}
