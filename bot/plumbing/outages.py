"""What Valet stands on going away for a while (the database, Redis): recognised by its errors,
and told in the log once a minute per dependency, not once per request.

`dependency_of(err)` names the dependency an exception says is unreachable ("database",
"redis"), following its causes; None for anything else (a bug of ours, a bad request, another
service). `OutageLog` is a logging filter on every handler (bot.plumbing.logs.add_handler): a record
about an outage (its exception is one, or it was logged with `extra=about("redis")`) becomes at
most one WARNING line a minute per dependency, without a traceback, which says how many lines
it stood for since the last; every other record passes untouched. `recovered(dependency)`
(called where a dependency is seen working again) logs that it is back, once, and lets the
next outage be told at once.

The state is one per process, as logging is: each handler's filter reads the same state, and a
record decided by the first handler is decided the same way by the others.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DATABASE = "database"
REDIS = "redis"
EVERY_SECONDS = 60.0
_VERDICT = "_valet_outage_verdict"  # set on a record once decided (several handlers)
_ABOUT = "valet_outage"  # extra={"valet_outage": "redis"}: a record about an outage


class Unreachable(Exception):
    """What a dependency's own errors derive from when they mean "out of reach" (the
    database's DatabaseUnavailable): `dependency` names it."""

    dependency: str = ""


class DependencyDown(Unreachable):
    """A dependency cannot be reached right now (raised where a part sees it so itself)."""

    def __init__(self, dependency: str, reason: str) -> None:
        super().__init__(f"{dependency} unreachable: {reason}")
        self.dependency = dependency


def about(dependency: str) -> dict[str, str]:
    """`extra=` for a log call that reports an outage without an exception."""
    return {_ABOUT: dependency}


def dependency_of(err: BaseException | None) -> str | None:
    """Which dependency this error says is unreachable, if any. Its explicit causes (`raise
    ... from err`) are read too, never the error it was raised while handling: a bug met while
    handling an outage is still a bug."""
    seen = 0
    while err is not None and seen < 8:
        found = _direct(err)
        if found is not None:
            return found
        err = err.__cause__
        seen += 1
    return None


def _direct(err: BaseException) -> str | None:
    if isinstance(err, Unreachable) and err.dependency:
        return err.dependency
    redis_errors = sys.modules.get("redis.exceptions")  # never loaded: not a Redis error
    if redis_errors is not None and isinstance(
            err, redis_errors.ConnectionError | redis_errors.TimeoutError):
        return REDIS
    asyncpg = sys.modules.get("asyncpg")  # the driver's own (its pool's log lines)
    if asyncpg is not None and isinstance(
            err, asyncpg.PostgresConnectionError | asyncpg.exceptions.OperatorInterventionError):
        return DATABASE
    return None


# Libraries that log their own connection trouble: an OSError in their lines is their server's.
_LIBRARY_OF = {"asyncpg": DATABASE, "redis": REDIS}


def _of_record(record: logging.LogRecord) -> str | None:
    about_it = getattr(record, _ABOUT, None)
    if isinstance(about_it, str):
        return about_it
    if not record.exc_info:
        return None
    err = record.exc_info[1]
    found = dependency_of(err)
    if found is None and isinstance(err, OSError):
        found = _LIBRARY_OF.get(record.name.split(".", 1)[0])
    return found


@dataclass
class _Down:
    since: float
    said_at: float
    unsaid: int = 0


class OutageState:
    def __init__(self, every: float = EVERY_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self._down: dict[str, _Down] = {}
        self._lock = threading.Lock()  # handlers may be called from other threads

    def decide(self, record: logging.LogRecord) -> bool:
        dependency = _of_record(record)
        if dependency is None or record.levelno < logging.INFO:
            return True
        now = self.clock()
        with self._lock:
            down = self._down.get(dependency)
            if down is not None and now - down.said_at < self.every:
                down.unsaid += 1
                return False
            unsaid = down.unsaid if down is not None else 0
            since = down.since if down is not None else now
            self._down[dependency] = _Down(since=since, said_at=now)
        _as_outage_line(record, dependency, unsaid, now - since, self.every)
        return True

    def recovered(self, dependency: str) -> float | None:
        """How long it was down, when it was (and forget it); None when it was not."""
        with self._lock:
            down = self._down.pop(dependency, None)
        return None if down is None else self.clock() - down.since

    def down(self) -> list[str]:
        with self._lock:
            return sorted(self._down)


def _as_outage_line(record: logging.LogRecord, dependency: str, unsaid: int, lasted: float,
                    every: float) -> None:
    """The record as the one line of this minute: a warning, its exception in one line."""
    try:
        message = record.getMessage()
    except Exception:
        message = str(record.msg)
    err = record.exc_info[1] if record.exc_info else None
    if err is not None:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        message += f": {type(err).__name__}" + (f": {reason}" if reason else "")
    note = f"{dependency} unreachable"
    if lasted >= 1:
        note += f" for {lasted:.0f}s"
    if unsaid:
        note += f"; {unsaid} more line(s) like this in the last {every:.0f}s not shown"
    record.msg, record.args = f"{message} [{note}; said once a minute]", None
    record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
    record.exc_info, record.exc_text, record.stack_info = None, None, None


STATE = OutageState()


class OutageLog(logging.Filter):
    """On a handler: outage records at most once a minute per dependency (see above)."""

    def __init__(self, state: OutageState | None = None) -> None:
        super().__init__()
        self.state = state or STATE

    def filter(self, record: logging.LogRecord) -> bool:
        verdict: Any = getattr(record, _VERDICT, None)
        if verdict is None:
            verdict = self.state.decide(record)
            setattr(record, _VERDICT, verdict)
        return bool(verdict)


def recovered(dependency: str, logger: logging.Logger | None = None,
              state: OutageState | None = None) -> None:
    """The dependency works again: said once (when its outage was told), and its next outage
    is told at once."""
    lasted = (state or STATE).recovered(dependency)
    if lasted is not None:
        (logger or logging.getLogger(__name__)).info(
            "%s reachable again (it was unreachable for about %.0fs)", dependency, lasted)
