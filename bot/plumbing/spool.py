"""Webhooks kept on this machine while the database is away: a file journal in the data
directory, so an acknowledged message is never lost to an outage.

Twilio does not send an SMS webhook again when it gets a 500, and Telegram's retries give up
in time: a message that reached Valet while Postgres was down would be gone. So a webhook whose
store fails because the database cannot be reached (bot.plumbing.outages: `DatabaseUnavailable`) is
written here instead, and answered as if stored:

    put(kind, payload)  one file per entry, written to a temporary name, fsynced, renamed into
                        place and the directory fsynced: durable when it returns. Files 0600
                        in a 0700 directory (a text's words are a person's).
    run()               the mover: the oldest entry first, handed to its kind's replayer (the
                        same code the webhook runs, with the time it arrived); the file is
                        removed once that returns. A crash between the two replays it again:
                        the inbox's dedupe by the channel's own id (a MessageSid, an update id,
                        an event id) makes that a duplicate, so each reaches the inbox once.
                        Still unreachable: the mover waits (1 s, growing to 5 s) and tries the
                        same entry again. Any other failure is tried `tries` times, then the
                        entry is kept aside in `failed/` with an ERROR line (never dropped).
    waiting(kind)       entries of that kind wait: a new webhook of the kind goes behind them,
                        so one person's messages keep their order through an outage (per
                        process: several web processes sharing the directory each move every
                        entry; the dedupe keeps it once). An entry that cannot be stored for
                        another reason (a channel not started yet) holds only its own kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from bot.plumbing.background import cancel_and_wait
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.outages import DATABASE, about, dependency_of, recovered
from bot.plumbing.wake import woken

log = logging.getLogger(__name__)

SUFFIX = ".json"
_KIND = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")
Replay = Callable[[Mapping[str, Any], datetime], Awaitable[None]]


@dataclass(frozen=True)
class Entry:
    path: Path
    kind: str
    payload: Mapping[str, Any]
    at: datetime  # when the webhook arrived


class Spool:
    def __init__(self, directory: Path, *, tries: int = 3, retry_seconds: float = 1.0,
                 max_wait_seconds: float = 5.0) -> None:
        self.directory = directory
        self.tries = tries
        self.retry_seconds = retry_seconds
        self.max_wait_seconds = max_wait_seconds
        self._replayers: dict[str, Replay] = {}
        self._seq = itertools.count()
        self._writing: Counter[str] = Counter()  # puts under way, by kind (not in place yet)
        self._pending: set[str] = set()  # kinds with entries waiting
        self._wake = asyncio.Event()
        self._failures: dict[str, int] = {}
        self._mover: asyncio.Task[None] | None = None
        self.moved = 0  # entries handed to the inbox by this process (metrics, tests)

    # --- the webhook's side -------------------------------------------------------------------

    def replays(self, kind: str, replay: Replay) -> None:
        """How entries of this kind are stored once the database is back."""
        if not _KIND.fullmatch(kind):
            raise ValueError(f"a spool kind is a short name of a-z, 0-9, . and _: {kind!r}")
        self._replayers[kind] = replay

    def waiting(self, kind: str) -> bool:
        """Entries of this kind wait to be moved: one that arrives now goes behind them."""
        return kind in self._pending or self._writing[kind] > 0

    async def put(self, kind: str, payload: Mapping[str, Any], at: datetime | None = None,
                  because: str = DATABASE) -> Path:
        """Durable when this returns (the caller may acknowledge its webhook). `because`: what
        could not be reached (its outage's log line of the minute says this one too)."""
        if kind not in self._replayers:
            raise ValueError(f"the spool cannot replay {kind!r}")
        at = at or datetime.now(UTC)
        name = f"{time.time_ns():020d}-{os.getpid()}-{next(self._seq):06d}.{kind}{SUFFIX}"
        data = json.dumps({"kind": kind, "at": at.isoformat(), "payload": dict(payload)},
                          ensure_ascii=False).encode()
        self._writing[kind] += 1
        try:
            path = await asyncio.to_thread(_write_durably, self.directory, name, data)
        finally:
            self._writing[kind] -= 1
        self._pending.add(kind)
        self._wake.set()
        # A line per webhook would be a line per request: this one joins the outage's line
        # of the minute (bot.plumbing.outages).
        log.warning("spool: %s kept in %s until it can be stored", kind, path.name,
                    extra=about(because))
        return path

    # --- the mover -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._mover is None:
            self._pending = {_kind_of(p) for p in self._entries()}  # left by an earlier run
            self._mover = asyncio.create_task(self.run())

    async def stop(self) -> None:
        if self._mover is not None:
            await cancel_and_wait(self._mover)
            self._mover = None

    async def run(self) -> None:
        waits = 0
        while True:
            if not self._pending:
                await woken(self._wake, 5.0)
            self._wake.clear()
            if await self.move_all() is None:  # something could not be stored yet
                waits += 1
                await asyncio.sleep(backoff_delay(waits, base=self.retry_seconds,
                                                  cap=self.max_wait_seconds))
            else:
                waits = 0

    async def move_all(self) -> int | None:
        """Every waiting entry stored, oldest first: how many were moved; None when some
        could not be yet (they wait, and what came after them of the same kind)."""
        moved, stuck = 0, False
        while True:
            progress, stuck = await self._one_pass()
            moved += progress
            if stuck or not progress:
                break
        # Synchronous from the listing on: a put finishing now is seen by the next pass.
        self._pending = {_kind_of(p) for p in self._entries()}
        if moved:
            log.warning("spool: %d kept message(s) stored", moved)
            recovered(DATABASE)
        return None if stuck else moved

    async def _one_pass(self) -> tuple[int, bool]:
        """(entries moved, whether any could not be): a kind whose entry could not be stored
        keeps the rest of that kind waiting behind it; the database unreachable stops all."""
        moved, blocked = 0, set[str]()
        for path in self._entries():
            kind = _kind_of(path)
            if kind in blocked:
                continue
            outcome = await self._move(path)
            if outcome is _Moved.DATABASE_DOWN:
                return moved, True
            if outcome is _Moved.LATER:
                blocked.add(kind)
            elif outcome is _Moved.DONE:
                moved += 1
        return moved, bool(blocked)

    async def _move(self, path: Path) -> _Moved:
        try:
            entry = _read(path)
        except FileNotFoundError:
            return _Moved.GONE  # moved by another process sharing the directory
        except (OSError, ValueError, KeyError, TypeError) as err:
            self._put_aside(path, f"unreadable: {err}")
            return _Moved.DONE
        replay = self._replayers.get(entry.kind)
        if replay is None:
            self._put_aside(path, f"nothing in this process stores {entry.kind!r}")
            return _Moved.DONE
        try:
            await replay(entry.payload, entry.at)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            dependency = dependency_of(err)
            if dependency is not None:  # said once a minute (bot.plumbing.outages)
                log.warning("spool: %s waits: %s", entry.kind, err, extra=about(dependency))
                return _Moved.DATABASE_DOWN if dependency == DATABASE else _Moved.LATER
            failures = self._failures[path.name] = self._failures.get(path.name, 0) + 1
            log.warning("spool: %s %s not stored (try %d): %s: %s", entry.kind, path.name,
                        failures, type(err).__name__, err, exc_info=failures == 1)
            if failures < self.tries:
                return _Moved.LATER
            self._put_aside(path, f"{type(err).__name__}: {err}")
            return _Moved.DONE
        self._failures.pop(path.name, None)
        _remove(path)
        self.moved += 1
        return _Moved.DONE

    def _put_aside(self, path: Path, reason: str) -> None:
        failed = self.directory / "failed"
        failed.mkdir(mode=0o700, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.replace(failed / path.name)
        self._failures.pop(path.name, None)
        log.error("spool: %s could not be stored (%s); kept in %s", path.name, reason, failed)

    def _entries(self) -> list[Path]:
        try:
            return sorted(p for p in self.directory.iterdir()
                          if p.name.endswith(SUFFIX) and not p.name.startswith("."))
        except FileNotFoundError:
            return []

    def count(self) -> int:
        """How many entries wait (every process's, in this directory)."""
        return len(self._entries())


class _Moved(Enum):
    DONE = "done"  # stored (or put aside): removed from the journal
    GONE = "gone"  # another process took it
    LATER = "later"  # not now: tried again, after a wait
    DATABASE_DOWN = "database down"  # nothing can be stored now


def _kind_of(path: Path) -> str:
    """`<time>-<pid>-<seq>.<kind>.json` -> kind."""
    return path.name.removesuffix(SUFFIX).split(".", 1)[-1]


def _write_durably(directory: Path, name: str, data: bytes) -> Path:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)  # whatever the umask made of it
    temporary = directory / f".{name}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    final = directory / name
    os.replace(temporary, final)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a power cut
    finally:
        os.close(dir_fd)
    return final


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):  # another process took it as well
        path.unlink()


def _read(path: Path) -> Entry:
    raw = json.loads(path.read_text(encoding="utf-8"))
    at = datetime.fromisoformat(raw["at"])
    return Entry(path, str(raw["kind"]), dict(raw["payload"]),
                 at if at.tzinfo else at.replace(tzinfo=UTC))


async def store_or_keep(spool: Spool | None, kind: str, payload: Mapping[str, Any],
                        at: datetime, store: Callable[[], Awaitable[object]]) -> bool:
    """A webhook made durable: `store()` (the inbox) now, or, when what it needs cannot be
    reached (the database; a channel not started yet), or entries of its kind wait before it,
    kept in the spool. True when kept. Any other failure is the caller's (raised)."""
    if spool is not None and spool.waiting(kind):
        await spool.put(kind, payload, at)
        return True
    try:
        await store()
    except Exception as err:
        dependency = dependency_of(err)
        if spool is None or dependency is None:
            raise
        await spool.put(kind, payload, at, because=dependency)
        return True
    return False
