"""`valet turns list [USER]` and `valet turns show TURN_ID`: what turns did, step by step (the
same trace `/debug` shows), read from the database: the traces of stored turns, and the
journal of a turn still running or cut short by a crash. No LLM, no running service needed."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.app.database import open_database
from bot.cli.person_ref import find_person
from bot.config import Settings
from bot.contracts.clock import SystemClock
from bot.loop.journal import JournalReplay, TurnJournal
from bot.loop.traces import SHOWN, render, shorten
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.turn.trace_store import TraceStore


def add_turn_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    turns = sub.add_parser("turns", help="what turns did: LLM calls, tools, approvals, stop")
    actions = turns.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="the latest turns (newest first), and turns "
                                              "still running or cut short")
    listing.add_argument("user", nargs="?", help="only this user (id, or channel:address)")
    listing.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    show = actions.add_parser("show", help="one turn, step by step")
    show.add_argument("turn_id", help="the turn's id (from `valet turns list`)")


async def run_turns(settings: Settings, args: argparse.Namespace,
                    say: Callable[[str], None] = print) -> int:
    db = await open_database(settings.database_url)
    try:
        traces, journal = TraceStore(db), TurnJournal(db, SystemClock())
        if args.action == "show":
            trace = await traces.get(args.turn_id)
            if trace is not None:
                say(render(trace, width=600))
                return 0
            replay = await journal.load(args.turn_id)
            if replay.empty:
                say(f"no turn {args.turn_id} (see `valet turns list`)")
                return 1
            say(journal_lines(args.turn_id, replay))
            return 0
        user_id = None
        if args.user:
            users = UserStore(db)
            user = await find_person(users, IdentityStore(db, users), args.user)
            if user is None:
                say(f"no such user: {args.user}")
                return 1
            user_id = user.id
        for trace in await traces.recent(user_id, args.limit):
            llm = sum(1 for e in trace.entries if e.get("kind") == "llm")
            tools = sum(1 for e in trace.entries if e.get("kind") == "tool")
            say(f"{trace.turn_id}\t{trace.at[:19]}\t{trace.user_id}\t{trace.stop}\t"
                f"{llm} LLM, {tools} tools, {trace.input_tokens}+{trace.output_tokens} "
                f"tokens\t{shorten(trace.said, 60)}")
        if user_id is None:
            for turn_id, started in await journal.open_turns():
                say(f"{turn_id}\t{str(started)[:19]}\t?\trunning or cut short (journal)")
        return 0
    finally:
        await db.close()


def journal_lines(turn_id: str, replay: JournalReplay) -> str:
    """A turn that has no trace yet, from its journal: what it recorded so far."""
    if replay.closed:
        return f"Turn {turn_id} was stopped ({replay.close_reason or '/stop'})."
    lines = [f"Turn {turn_id} is running or was cut short; its journal holds:"]
    for step in sorted(replay.responses):
        response, _ = replay.responses[step]
        asked = ", ".join(c.name for c in response.tool_calls)
        lines.append(f"LLM step {step}: " + (f"asked for {asked}" if asked else
                                              f"answered “{shorten(response.content, SHOWN)}”"))
        for (at, call_id), started in sorted(replay.started.items()):
            if at != step:
                continue
            result = replay.result(step, call_id)
            lines.append(f"  tool {started.get('name')}({shorten(started.get('arguments'), 80)})"
                         f" -> " + (f"{result.status.value}: {shorten(result.content, SHOWN)}"
                                    if result else "no result recorded"))
    return "\n".join(lines)
