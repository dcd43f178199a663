"""Which parts of Valet this `valet serve` process runs, and what follows from that.

    web        HTTP: webhooks, POST /events, health, /metrics; the Telegram poller. It checks,
               stores and acknowledges; it never runs a turn, a tool or an LLM call (its
               stored rows are announced on the work stream)
    worker     turns (the work stream, the inbox sweep), delivery, the approval sweeper, mail,
               memory; health and /metrics on its own port; the owner's console
    scheduler  the trigger engine (the leader fires due runs, polls conditions), event
               dispatch, run-now
    all        all three in one process: the only role on SQLite, the default

Roles other than `all` share one Postgres and one Redis; any number of each, on one machine
or several. Everything that depends on "which parts am I?" asks here.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import ConfigError, Settings

ALL = "all"
WEB, WORKER, SCHEDULER = "web", "worker", "scheduler"
PARTS = (WEB, WORKER, SCHEDULER)
ROLES = (ALL, *PARTS)


@dataclass(frozen=True)
class Roles:
    """The parts one process runs (`--role` may be given more than once)."""

    parts: frozenset[str]

    @classmethod
    def of(cls, names: list[str] | tuple[str, ...] | None) -> Roles:
        chosen = set(names or [ALL])
        return cls(frozenset(PARTS) if ALL in chosen else frozenset(chosen))

    @property
    def web(self) -> bool:
        return WEB in self.parts

    @property
    def worker(self) -> bool:
        return WORKER in self.parts

    @property
    def scheduler(self) -> bool:
        return SCHEDULER in self.parts

    @property
    def everything(self) -> bool:
        return self.parts == frozenset(PARTS)

    def __str__(self) -> str:
        return ALL if self.everything else "+".join(p for p in PARTS if p in self.parts)


def check_roles(settings: Settings, roles: Roles) -> None:
    """A process that is not the whole deployment shares Postgres and Redis with the others;
    on SQLite (one process) only `all` exists. ConfigError, one line, otherwise."""
    if roles.everything:
        return
    if settings.database_url.startswith("sqlite"):
        raise ConfigError(f"--role {roles} needs Postgres (VALET_DATABASE_URL): SQLite serves "
                          "one process, which runs every role (`valet serve` alone)")
    if not settings.redis_url:
        raise ConfigError(f"--role {roles} needs Redis (VALET_REDIS_URL): it hands work and "
                          "signals between the processes")


def all_in_one(settings: Settings, role: str | Roles = ALL) -> bool:
    """True when this process is the whole deployment (it may then prepare the database)."""
    roles = role if isinstance(role, Roles) else Roles.of([role])
    return roles.everything


def migrates_on_start(settings: Settings, role: str | Roles = ALL) -> bool:
    """The all-in-one set-up applies pending migrations itself; a process that shares the
    database with others (any other role) refuses an old schema and asks for `valet migrate`
    (one process, once, before the new release starts), so two releases never migrate under
    each other."""
    return all_in_one(settings, role)
