"""One process runs turns on a SQLite file.

SQLite has no cross-process claims (no row locks, no Redis): two `valet chat` processes on
one file would both take every inbox row and deliver each other's replies. So the process
that runs turns holds an OS lock (flock) on a sibling file for as long as it runs; a second
one is refused. The kernel drops the lock when its process dies, however it dies, so a crash
never leaves a stale lock behind. Admin commands (`valet users ...`) do not take it: they
only touch the database briefly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from bot.config import ConfigError
from bot.plumbing.private import private_dir


class DatabaseInUse(ConfigError):
    """Another process already runs turns on this SQLite file."""


class SQLiteOwner:
    """The held lock; `release()` (or process exit) lets the next process in."""

    def __init__(self, lock_path: Path, fd: int) -> None:
        self.lock_path = lock_path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, database_file: str) -> SQLiteOwner:
        """Raises DatabaseInUse, with one line saying why and what to use instead."""
        lock_path = Path(f"{database_file}.owner.lock")
        private_dir(lock_path.parent)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise DatabaseInUse(
                f"another Valet process{f' (pid {holder})' if holder else ''} is already "
                f"running on {database_file}; a SQLite file serves one process. To run "
                "several, use Postgres and Redis (VALET_DATABASE_URL=postgresql://..., "
                "VALET_REDIS_URL=redis://...).") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(lock_path, fd)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor drops the flock


def _read_pid(fd: int) -> str:
    """Who holds it, for the message (best effort: only informative)."""
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""


def claim(database_url: str) -> SQLiteOwner | None:
    """Hold the file of a sqlite:// URL for this process; None when there is nothing to hold
    (Postgres serves many processes; an in-memory database is this process's alone)."""
    if not database_url.startswith("sqlite:"):
        return None
    from bot.db.sqlite import file_of

    path = file_of(database_url)
    return None if path == ":memory:" else SQLiteOwner.acquire(path)
