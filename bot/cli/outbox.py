"""`valet outbox list [--dead] [--user USER]` and `valet outbox retry ID`: what Valet has
queued to send, what it gave up on (dead letters, with the reason), and a dead message put
back in the queue. Like the other admin commands they work on the database directly; the
running `valet serve` delivers what is queued again."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bot.app.database import open_database
from bot.cli.admin import table
from bot.cli.person_ref import find_person
from bot.config import Settings
from bot.gateway.outbox import OutboxStore
from bot.people.identity import IdentityStore
from bot.people.users import UserStore

Say = Callable[[str], None]
TEXT_SHOWN = 40  # characters of a message's text in the listing
UNKNOWN_OUTCOME = "delivery outcome unknown"


def add_outbox_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    outbox = sub.add_parser("outbox", help="messages queued to send, and dead letters")
    actions = outbox.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="newest first")
    listing.add_argument("--dead", action="store_true",
                         help="only the messages Valet gave up on (with the reason)")
    listing.add_argument("--user", help="only this user's (id, or channel:address)")
    listing.add_argument("-n", "--limit", type=int, default=50, help="at most this many (50)")
    retry = actions.add_parser("retry", help="queue a dead message again (the running valet "
                               "serve sends it)")
    retry.add_argument("id", type=int, help="the message id (see `valet outbox list --dead`)")


async def run_outbox(settings: Settings, args: argparse.Namespace, say: Say = print) -> int:
    db = await open_database(settings.database_url)
    try:
        store = OutboxStore(db)
        if args.action == "retry":
            return await _retry(store, args.id, say)
        user_id = None
        if args.user:
            users = UserStore(db)
            found = await find_person(users, IdentityStore(db, users), args.user)
            if found is None:
                say(f"no such user: {args.user}")
                return 1
            user_id = found.id
        rows = await store.list("dead" if args.dead else None, max(args.limit, 1),
                                user_id=user_id)
        say(table(("ID", "STATUS", "TO", "USER", "TRIES", "CREATED (UTC)", "TEXT", "ERROR"),
                  [_row(r) for r in rows]) if rows
            else ("no dead messages" if args.dead else "the outbox is empty"))
        return 0
    finally:
        await db.close()


def _row(r: Any) -> tuple[str, ...]:
    text = " ".join(str(r["text"]).split())
    if len(text) > TEXT_SHOWN:
        text = text[:TEXT_SHOWN - 1] + "…"
    created = r["created_at"]
    when = created.strftime("%Y-%m-%d %H:%M") if hasattr(created, "strftime") \
        else str(created)[:16]
    return (str(r["id"]), r["status"], f"{r['channel']}:{r['address']}", r["user_id"] or "-",
            str(r["attempts"]), when, text or "-", " ".join(str(r["last_error"] or "").split())
            or "-")


async def _retry(store: OutboxStore, message_id: int, say: Say) -> int:
    row = await store.get(message_id)
    if row is None:
        say(f"no message {message_id} (see `valet outbox list`)")
        return 1
    if not await store.retry_dead(message_id, datetime.now(UTC)):
        say(f"message {message_id} is {row['status']}, not dead: nothing to retry")
        return 1
    say(f"queued {message_id} again for {row['channel']}:{row['address']}; the running valet "
        "serve sends it")
    if str(row["last_error"] or "").startswith(UNKNOWN_OUTCOME):
        say("note: its first try may have arrived (the process stopped while sending): the "
            "person may get it twice")
    return 0
