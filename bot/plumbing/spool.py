"""Webhooks kept on this machine while the database is away: a file journal in the data
directory, so an acknowledged message is never lost to an outage.

Twilio does not send an SMS webhook again when it gets a 500, and Telegram's retries give up
in time: a message that reached Valet while Postgres was down would be gone. So a webhook whose
store fails because the database cannot be reached (bot.plumbing.outages: `DatabaseUnavailable`) is
written here instead, and answered as if stored:

    put(kind, payload)  one file per entry, written to a temporary name, fsynced, renamed into
                        place and the directory fsynced: durable when it returns. Files 0600
                        in a 0700 directory (a text's words are a person's). A write that
                        fails (a full disk) leaves no temporary file behind and raises
                        `SpoolUnwritable`: the webhook is answered 503, with one ERROR line,
                        never acknowledged as kept.
    run()               the mover: the oldest entry first, handed to its kind's replayer (the
                        same code the webhook runs, with the time it arrived); the file is
                        removed once that returns. A crash between the two replays it again:
                        the inbox's dedupe by the channel's own id (a MessageSid, an update id,
                        an event id) makes that a duplicate, so each reaches the inbox once.
                        Still unreachable: the mover waits (1 s, growing to 5 s) and tries the
                        same entry again. Any other failure is tried `tries` times, then the
                        entry is put aside in `failed/` with an ERROR line (never dropped), as
                        is an entry that cannot be read (corrupt): counted and logged as put
                        aside, never as stored.
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

from aiohttp import web

from bot.plumbing.background import cancel_and_wait
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.outages import DATABASE, about, dependency_of, recovered
from bot.plumbing.wake import woken

log = logging.getLogger(__name__)

SUFFIX = ".json"
_KIND = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")
Replay = Callable[[Mapping[str, Any], datetime], Awaitable[None]]


class SpoolUnwritable(web.HTTPServiceUnavailable):
    """The spool could not keep a webhook (a full or read-only disk): raised from the
    webhook's handler, aiohttp answers 503 (the sender may try again; nothing was
    acknowledged) without a traceback."""

    def __init__(self, kind: str, err: OSError) -> None:
        super().__init__(text="cannot keep this message now; try again later")
        self.why = f"{kind}: {type(err).__name__}: {err}"


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
        # Kinds with entries waiting; those an earlier run left count from the first second,
        # so a webhook that can be stored before the mover starts still goes behind them.
        self._pending: set[str] = {_kind_of(p) for p in self._entries()}
        self._wake = asyncio.Event()
        self._failures: dict[str, int] = {}
        self._mover: asyncio.Task[None] | None = None
        self.moved = 0  # entries handed to the inbox by this process (metrics, tests)
        self.put_aside = 0  # entries moved to failed/ by this process

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
        except OSError as err:
            log.error("spool: a %s webhook could not be kept in %s (%s: %s): answered 503",
                      kind, self.directory, type(err).__name__, err)
            raise SpoolUnwritable(kind, err) from err
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
        moved, aside, stuck = 0, 0, False
        while True:
            stored, put_aside, stuck = await self._one_pass()
            moved, aside = moved + stored, aside + put_aside
            if stuck or not stored + put_aside:
                break
        # Synchronous from the listing on: a put finishing now is seen by the next pass.
        self._pending = {_kind_of(p) for p in self._entries()}
        if moved:
            log.warning("spool: %d kept message(s) stored", moved)
            recovered(DATABASE)
        if aside:
            log.error("spool: %d kept message(s) put aside in %s (not stored; see the lines "
                      "above)", aside, self.directory / "failed")
        return None if stuck else moved

    async def _one_pass(self) -> tuple[int, int, bool]:
        """(entries stored, entries put aside, whether any could not be moved): a kind whose
        entry could not be stored keeps the rest of that kind waiting behind it; the database
        unreachable stops all."""
        done: Counter[_Moved] = Counter()
        blocked = set[str]()
        for path in self._entries():
            kind = _kind_of(path)
            if kind in blocked:
                continue
            outcome = await self._move(path)
            if outcome is _Moved.DATABASE_DOWN:
                return done[_Moved.DONE], done[_Moved.ASIDE], True
            if outcome is _Moved.LATER:
                blocked.add(kind)
            done[outcome] += 1
        return done[_Moved.DONE], done[_Moved.ASIDE], bool(blocked)

    async def _move(self, path: Path) -> _Moved:
        try:
            entry = _read(path)
        except FileNotFoundError:
            return _Moved.GONE  # moved by another process sharing the directory
        except (OSError, ValueError, KeyError, TypeError) as err:
            return self._put_aside(path, f"unreadable: {type(err).__name__}: {err}")
        replay = self._replayers.get(entry.kind)
        if replay is None:
            return self._put_aside(path, f"nothing in this process stores {entry.kind!r}")
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
            return self._put_aside(path, f"{type(err).__name__}: {err}")
        self._failures.pop(path.name, None)
        _remove(path)
        self.moved += 1
        return _Moved.DONE

    def _put_aside(self, path: Path, reason: str) -> _Moved:
        failed = self.directory / "failed"
        failed.mkdir(mode=0o700, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.replace(failed / path.name)
        self._failures.pop(path.name, None)
        self.put_aside += 1
        log.error("spool: %s put aside in %s, not stored (%s)", path.name, failed, reason)
        return _Moved.ASIDE

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
    DONE = "done"  # stored: removed from the journal
    ASIDE = "put aside"  # unreadable, or failed every try: moved to failed/
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
    final = directory / name
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, final)
    except BaseException:
        # A full disk: the half-written file would take the room the next outage needs.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
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
