"""Which parts of Valet this `valet serve` process runs, and what follows from that.

Today every `valet serve` is the all-in-one set-up: HTTP, turns, delivery and the scheduler in
one process (`--role all`, the only role so far). Process roles (web, worker, scheduler) will
extend `ROLES` and `all_in_one`; everything that depends on "am I the whole deployment?" asks
here, so it changes in one place.
"""

from __future__ import annotations

from bot.config import Settings

ALL = "all"
ROLES = (ALL,)  # web, worker and scheduler join when process roles land


def all_in_one(settings: Settings, role: str = ALL) -> bool:
    """True when this process is the whole deployment (it may then prepare the database)."""
    return role == ALL


def migrates_on_start(settings: Settings, role: str = ALL) -> bool:
    """The all-in-one set-up applies pending migrations itself; a process that shares the
    database with others refuses an old schema and asks for `valet migrate` (one process,
    once, before the new release starts), so two releases never migrate under each other."""
    return all_in_one(settings, role)
