"""`valet memory list|forget USER [FACT_ID]`: the owner's view of what Valet remembers.

Works on the database directly (no LLM, no running service needed). USER is a user id or
channel:address (sms:+15551234567), as for `valet users`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.app.database import open_database
from bot.cli.person_ref import find_person
from bot.config import Settings
from bot.contracts.clock import Clock, SystemClock
from bot.contracts.people import User
from bot.memory.facts import Closed, FactStore
from bot.people.identity import IdentityStore
from bot.people.users import UserStore


def add_memory_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    memory = sub.add_parser("memory", help="what Valet remembers about a person")
    actions = memory.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="a person's facts still true (newest first)")
    listing.add_argument("user", help="user id, or channel:address (e.g. sms:+15551234567)")
    listing.add_argument("--all", action="store_true",
                         help="also the facts replaced or forgotten, oldest first")
    forget = actions.add_parser("forget", help="forget one fact, or every fact with --yes")
    forget.add_argument("user", help="user id, or channel:address")
    forget.add_argument("fact_id", nargs="?", type=int, help="the fact's number (from list)")
    forget.add_argument("--yes", action="store_true",
                        help="with no FACT_ID: really forget everything about the person")


async def run_memory(settings: Settings, args: argparse.Namespace,
                     say: Callable[[str], None] = print, clock: Clock | None = None) -> int:
    db = await open_database(settings.database_url)
    try:
        users = UserStore(db)
        user = await find_person(users, IdentityStore(db, users), args.user)
        if user is None:
            say(f"no such user: {args.user}")
            return 1
        store = FactStore(db, clock or SystemClock())
        if args.action == "list":
            return await _list(store, user, args.all, say)
        return await _forget(store, user, args.fact_id, args.yes, say)
    finally:
        await db.close()


async def _list(store: FactStore, user: User, everything: bool,
                say: Callable[[str], None]) -> int:
    facts = await store.history(user.id) if everything else await store.open_facts(user.id)
    for f in facts:
        closed = f"\t{f.closed_reason} {f.valid_to:%Y-%m-%d %H:%M}" if f.valid_to else ""
        say(f"{f.id}\t{f.kind.value}\t{f.valid_from:%Y-%m-%d %H:%M}\t{f.text}{closed}")
    if not facts:
        say(f"nothing remembered about {user.id}")
    return 0


async def _forget(store: FactStore, user: User, fact_id: int | None, sure: bool,
                  say: Callable[[str], None]) -> int:
    if fact_id is not None:
        closed = await store.close(user.id, [fact_id], Closed.FORGOTTEN)
        if not closed:
            say(f"{user.id} has no fact {fact_id} still remembered")
            return 1
        say(f"forgot {fact_id}: {closed[0].text}")
        return 0
    count = len(await store.open_facts(user.id))
    if not sure:
        say(f"this forgets all {count} facts remembered about {user.id}; "
            "run again with --yes to do it")
        return 1
    say(f"forgot {await store.forget_all(user.id)} facts about {user.id}")
    return 0
