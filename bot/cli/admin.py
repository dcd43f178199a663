"""Administrative commands: `valet users ...`, `valet pair ...`. They work on the database
directly; anything they queue for a person (a "you're in" message) is sent by the next
`valet` process that delivers (chat or serve)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.approvals.listing import TABLE_HEADER, table_rows
from bot.cli.person_ref import find_person
from bot.config import Settings
from bot.contracts.approvals import ApprovalStatus
from bot.contracts.people import User
from channels.registry import specs
from persona.catalog import LANGUAGES, language_named
from persona.speaking import speaking_to

if TYPE_CHECKING:
    from bot.app import App  # imported when run, after the CLI has parsed its arguments

STATUSES = [s.value for s in ApprovalStatus]


def add_admin_commands(sub: argparse._SubParsersAction) -> None:
    users = sub.add_parser("users", help="list, show, block or unblock users")
    users_sub = users.add_subparsers(dest="action", required=True)
    users_sub.add_parser("list", help="every user with their linked addresses")
    for action, what in (("show", "one user: addresses, history size, SMS use"),
                         ("block", "stop a user from reaching Valet (not the owner)"),
                         ("unblock", "let a blocked user in again")):
        p = users_sub.add_parser(action, help=what)
        p.add_argument("user", help="user id, or channel:address (e.g. sms:+15551234567)")
    setting = users_sub.add_parser("set", help="change a user's settings")
    setting.add_argument("user", help="user id, or channel:address (e.g. sms:+15551234567)")
    setting.add_argument("--language", required=True, metavar="LANGUAGE",
                         help="the language Valet writes to them in: "
                              + ", ".join(LANGUAGES) + ", or default (the persona's)")
    pair = sub.add_parser("pair", help="pending pairing requests from unknown senders")
    pair_sub = pair.add_subparsers(dest="action", required=True)
    pair_sub.add_parser("list", help="requests waiting for approval")
    for action, what in (("approve", "let the sender in (they are told)"),
                         ("deny", "refuse the request")):
        pair_sub.add_parser(action, help=what).add_argument(
            "code", help="the pairing code shown by `valet pair list`")
    approvals = sub.add_parser("approvals", help="approval requests (pending and past)")
    approvals_sub = approvals.add_subparsers(dest="action", required=True)
    listing = approvals_sub.add_parser("list", help="newest first")
    listing.add_argument("--user", help="user id, or channel:address")
    listing.add_argument("--status", choices=STATUSES, metavar="STATUS",
                         help="only this status: " + ", ".join(STATUSES))


async def run_admin(settings: Settings, args: argparse.Namespace,
                    say: Callable[[str], None] = print) -> int:
    from bot.app import App

    app = await App.build(settings, llm=_NoLLM() if not settings.llm.configured else None)
    try:
        if args.command == "users":
            return await _users(app, args, say)
        if args.command == "approvals":
            return await _approvals(app, args, say)
        return await _pair(app, args, say)
    finally:
        await app.close()


class _NoLLM:
    """Admin commands never call the LLM; they must work without one configured."""

    model = ""

    async def complete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError("admin commands do not call the LLM")

    async def list_models(self) -> list[str]:
        return []

    async def close(self) -> None:
        return None


async def _users(app: App, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    if args.action == "list":
        rows = []
        for listed in await app.users.list():
            ids = await app.identities.of_user(listed.id)
            flags = ("owner " if listed.is_owner else "") + ("BLOCKED" if listed.blocked else "")
            linked = ", ".join(f"{i.channel}:{i.address}" for i in ids) or "-"
            rows.append((listed.id, listed.display_name or "-", listed.timezone, linked,
                         flags.strip() or "-"))
        say(table(("ID", "NAME", "TIMEZONE", "LINKED", "FLAGS"), rows) if rows
            else "no users yet")
        return 0
    user = await find_person(app.users, app.identities, args.user)
    if user is None:
        say(f"no such user: {args.user}")
        return 1
    if args.action == "set":
        return await _set_language(app, user, args.language, say)
    if args.action == "show":
        ids = await app.identities.of_user(user.id)
        say(f"id: {user.id}\nname: {user.display_name or '-'}\ntimezone: {user.timezone}\n"
            f"preferred channel: {user.preferred_channel or '-'}\n"
            f"language: {user.language or 'default'}\nowner: {user.is_owner}\n"
            f"blocked: {user.blocked}\nmessages: {await app.history.count(user.id)}\n"
            + "".join(f"{unit.lower()} this month: {count}\n"
                      for unit, count in await _units_this_month(app, user)) +
            "linked: " + (", ".join(f"{i.channel}:{i.address}" for i in ids) or "-"))
        return 0
    if user.is_owner and args.action == "block":
        say("refusing to block the owner")
        return 1
    await app.users.set_blocked(user.id, args.action == "block")
    say(f"{user.id} {'blocked' if args.action == 'block' else 'unblocked'}")
    return 0


async def _set_language(app: App, user: User, given: str, say: Callable[[str], None]) -> int:
    code = None if given.strip().lower() == "default" else language_named(given)
    if code is None and given.strip().lower() != "default":
        say(f"unknown language {given!r}: one of {', '.join(LANGUAGES)}, or default")
        return 2
    await app.users.set_language(user.id, code, app.clock.now())
    say(f"{user.id} reads {code or 'the default language'} now")
    return 0


async def _units_this_month(app: App, user: User) -> list[tuple[str, int]]:
    """What each channel that charges counted for the user (SMS: segments sent to them) since
    the 1st of this month in their timezone."""
    try:
        zone = ZoneInfo(user.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    local = app.clock.now().astimezone(zone)
    since = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)
    return [(spec.usage.unit, await spec.usage.since(app.db, user.id, since))
            for spec in specs(app.settings) if spec.usage is not None]


async def _pair(app: App, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    now = app.clock.now()
    if args.action == "list":
        pending = await app.access.list_pairings(now)
        rows = [(p.code, f"{p.channel}:{p.address}", p.display_name or "-",
                 f"{p.expires_at:%Y-%m-%d %H:%M} UTC") for p in pending]
        say(table(("CODE", "FROM", "NAME", "EXPIRES"), rows) if rows else "nobody is waiting")
        return 0
    code = args.code.upper()
    if args.action == "deny":
        ok = await app.access.deny(code, now)
        say(f"denied {code}" if ok else f"no pending request {code}")
        return 0 if ok else 1
    user = await app.access.approve(code, now)
    if user is None:
        say(f"no pending request {code} (it may have expired)")
        return 1
    with speaking_to(user.language):  # theirs, as `/pair approve` says it
        welcome = app.persona.lines.pairing_welcome
    await app.outbound.notify_user(user, welcome, dedupe_key=f"paired:{code}")
    for owner in [u for u in await app.users.list() if u.is_owner]:
        await app.outbound.settle_prompts(owner.id)  # the pairing card says what happened
    say(f"approved {code}: user {user.id}")
    return 0


async def _approvals(app: App, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    user_id = None
    if args.user:
        user = await find_person(app.users, app.identities, args.user)
        if user is None:
            say(f"no such user: {args.user}")
            return 1
        user_id = user.id
    found = await app.approvals.store.list(
        user_id, ApprovalStatus(args.status) if args.status else None)
    rows = table_rows(found)
    say(table(TABLE_HEADER, rows) if rows else "no approvals")
    return 0


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Columns padded to their widest cell, a header on top; the last column runs free."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    return "\n".join("  ".join([*(str(c).ljust(w) for c, w in zip(r, widths, strict=False)),
                               str(r[-1])]).rstrip() for r in [header, *rows])
