"""`valet budget list` and `valet budget raise PERSON [--usd AMOUNT]`: what each person spent
in the last 24 hours (the window the budget holds: bot.meter) and this month against their
daily budget (`budget:`), and the owner letting someone
at it go on today. Like the other admin commands they work on the database directly: the
running `valet serve` lets the person's waiting messages through at its next look
(`budget.check_seconds`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.app.budget import budget_from
from bot.app.database import open_database
from bot.budget import Spending, dollars
from bot.cli.admin import table
from bot.cli.person_ref import find_person
from bot.config import Settings
from bot.contracts.clock import Clock, SystemClock
from bot.contracts.people import User
from bot.gateway.budget import Figures, figures, raise_today
from bot.gateway.inbox import InboxStore
from bot.people.identity import IdentityStore
from bot.people.users import UserStore

Say = Callable[[str], None]


def add_budget_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    budget = sub.add_parser("budget", help="what each person spent today and this month, "
                                           "and their daily allowance")
    actions = budget.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="everyone: today, the allowance, this month, waiting")
    raising = actions.add_parser("raise", help="let a person at today's allowance go on "
                                               "(their waiting messages are answered)")
    raising.add_argument("user", help="user id, or channel:address (e.g. sms:+15551234567)")
    raising.add_argument("--usd", type=_amount, metavar="AMOUNT",
                         help="add this many dollars to today's allowance (default: one "
                              "more day's allowance)")


def _amount(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of dollars") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("the amount must be more than 0")
    return value


async def run_budget(settings: Settings, args: argparse.Namespace, say: Say = print,
                     clock: Clock | None = None) -> int:
    db = await open_database(settings.database_url)
    try:
        users = UserStore(db)
        spending, limits, inbox = Spending(db), budget_from(settings), InboxStore(db)
        now = (clock or SystemClock()).now()
        if args.action == "list":
            rows = [_row(u, await figures(spending, limits, u, now, inbox))
                    for u in await users.list()]
            say(table(("USER", "NAME", "LAST 24H", "ALLOWANCE", "THIS MONTH", "WAITING"), rows)
                if rows else "no users yet")
            return 0
        user = await find_person(users, IdentityStore(db, users), args.user)
        if user is None:
            say(f"no such user: {args.user}")
            return 1
        added = await raise_today(spending, limits, user, now, args.usd)
        if not added:
            say(f"{user.id} has no daily allowance to raise (budget.owner_daily_usd is not "
                "set); give an amount with --usd to raise it anyway")
            return 1
        after = await figures(spending, limits, user, now, inbox)
        waiting = (f"; their {after.waiting} waiting message(s) go on within "
                   f"{settings.budget.check_seconds:g} s (the running valet serve)"
                   if after.waiting and not after.over else "")
        say(f"raised {user.id}'s allowance for today by {dollars(added)}: "
            f"{dollars(after.today.total)} spent of {dollars(after.budget or 0)}{waiting}")
        return 0
    finally:
        await db.close()


def _row(user: User, shown: Figures) -> tuple[str, ...]:
    return (user.id, user.display_name or "-", dollars(shown.today.total),
            dollars(shown.budget) if shown.budget is not None else "none",
            dollars(shown.month.total), str(shown.waiting))
