"""SQL statements per plain turn (a known person's "hello", answered with no tool), by what
issued them, on SQLite and Postgres (goal: 12 or fewer; tests/integration/
test_statement_budget.py keeps it there). BEGIN and COMMIT count: each is a round trip.

  turn           receive (inbox, access) -> claim -> the turn -> reply queued, row closed
  delivery       the outbox deliverer: its scan for what is due, the claim, marked sent
  first contact  the same turn from someone Valet has never seen (the person is created)
"""

from __future__ import annotations

import tempfile

from bot.db.counting import report
from tests.servers import ThrowawayPostgres, find_pg_bin
from tests.turn_statements import count_plain_turn


async def _counted(url: str, label: str) -> list[str]:
    count = await count_plain_turn(url)
    return [f"  {label}: {len(count.turn)} statements per plain turn "
            f"(+ {len(count.delivery)} delivering it; first contact {len(count.first_contact)})",
            *report(count.turn),
            "    delivery:", *report(count.delivery, indent="      ")]


async def run() -> list[str]:
    out = ["Statements per plain turn, by issuer (goal: 12 or fewer)"]
    with tempfile.TemporaryDirectory() as tmp:
        out += await _counted(f"sqlite:///{tmp}/s.db", "SQLite")
    if find_pg_bin() is None:
        return [*out, "  Postgres: skipped (no server binaries)"]
    pg = ThrowawayPostgres().start()
    try:
        out += await _counted(pg.create_database("statements"), "Postgres")
    finally:
        pg.stop()
    return out
