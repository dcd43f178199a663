"""SQL statements per plain turn (a known person's "hello", answered with no tool), by what
issued them, on SQLite and Postgres (goal: 12 or fewer; tests/integration/
test_statement_budget.py keeps it there). BEGIN and COMMIT count: each is a round trip.

  turn           receive (inbox, access) -> claim -> the turn -> reply queued, row closed
  delivery       the outbox deliverer: its scan for what is due, the claim, marked sent
  first contact  the same turn from someone Valet has never seen (the person is created)
  floor          a message answered at the door (SMS HELP: recorded, its line queued, the row
                 closed, no turn): what any answered message costs
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime

from bot.app import App
from bot.app.database import open_database
from bot.config import load_settings
from bot.contracts.envelopes import IncomingMessage
from bot.db.counting import CountingDatabase, report
from tests.servers import ThrowawayPostgres, find_pg_bin
from tests.turn_statements import InstantLLM, count_plain_turn

GOAL = 12


async def _door(url: str) -> int:
    """Statements of a message answered at the door (the delivery not counted)."""
    settings = load_settings(None, env={"VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null"})
    db = CountingDatabase(await open_database(url))
    app = await App.build(settings, llm=InstantLLM(), db=db)
    try:
        db.log.clear()
        await app.gateway.answer_at_the_door(IncomingMessage(
            channel="bench", address="door", external_id="door-1", text="HELP",
            received_at=datetime.now(UTC)), "Valet: reply STOP to stop.", user_id=None)
        return len([s for s in db.log.statements if not any("Deliverer" in c
                                                            for c in s.chain)])
    finally:
        await app.close()


async def _counted(url: str, label: str, door_url: str) -> list[str]:
    count = await count_plain_turn(url)
    turn = len(count.turn)
    # SQLite's BEGIN and COMMIT are not round trips: the goal does not count them.
    trips = len([s for s in count.turn if s.sql not in ("BEGIN", "COMMIT")])
    return [f"  {label}: {turn} statements per plain turn "
            f"(+ {len(count.delivery)} delivering it; first contact {len(count.first_contact)}); "
            f"floor {await _door(door_url)} (answered at the door); goal <= {GOAL} round "
            f"trips: {trips}, {'met' if trips <= GOAL else 'NOT MET'}",
            *report(count.turn),
            "    delivery:", *report(count.delivery, indent="      ")]


async def run() -> list[str]:
    out = [f"Statements per plain turn, by issuer (goal: {GOAL} or fewer)"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await _counted(f"sqlite:///{tmp}/s.db", "SQLite", f"sqlite:///{tmp}/d.db")
    if find_pg_bin() is None:
        return [*out, "  Postgres: skipped (no server binaries)"]
    pg = ThrowawayPostgres().start()
    try:
        out += await _counted(pg.create_database("statements"), "Postgres",
                              pg.create_database("statements_door"))
    finally:
        pg.stop()
    return out
