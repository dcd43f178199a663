"""Exactly one poller per bot token, also with several processes.

Telegram hands each update to whichever getUpdates call asks first, and answers a second
concurrent poller with 409 Conflict; two pollers would also split one chat's updates between
processes. So a process polls only while it holds the bot's lease:

- with Redis (several machines): a key with a expiry, renewed while polling, deleted on stop
  only by its holder (a process that dies loses it after `ttl`);
- without Redis (one machine, SQLite): an exclusive OS file lock beside the database; the
  kernel drops it when the process dies, even by kill -9.

The key is the bot's numeric id (the part of the token before ':'), never the token.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from pathlib import Path
from typing import IO, Any, Protocol

from bot.plumbing.private import private_file


class PollerLease(Protocol):
    async def acquire(self) -> bool:
        """Take the lease if free (or keep it if held); False when another process has it."""
        ...

    async def release(self) -> None: ...

    async def close(self) -> None:
        """Release, and let go of any connection the lease holds."""
        ...


class FileLease:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    async def acquire(self) -> bool:
        return self._file is not None or self._try_lock()

    def _try_lock(self) -> bool:
        """A local file and a non-blocking lock: instant, so fine on the event loop."""
        private_file(self.path)
        file = open(self.path, "a+")  # held open as long as the lock
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            file.close()
            return False
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file
        return True

    async def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    async def close(self) -> None:
        await self.release()


_RENEW = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"""
_RELEASE = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1]) else return 0 end"""


class RedisLease:
    def __init__(self, client: Any, key: str, ttl_seconds: float = 60.0) -> None:
        self.client, self.key = client, key
        self.ttl_ms = int(ttl_seconds * 1000)
        self._token = secrets.token_hex(16)
        self._held = False

    async def acquire(self) -> bool:
        if self._held:
            self._held = bool(await self.client.eval(_RENEW, 1, self.key, self._token,
                                                     self.ttl_ms))
            return self._held
        self._held = bool(await self.client.set(self.key, self._token, nx=True,
                                                px=self.ttl_ms))
        return self._held

    async def release(self) -> None:
        if self._held:
            await self.client.eval(_RELEASE, 1, self.key, self._token)
            self._held = False

    async def close(self) -> None:
        await self.release()
        await self.client.aclose()


def bot_id(token: str) -> str:
    return token.split(":", 1)[0] if ":" in token else "bot"


def lease_file(database_url: str, token: str) -> Path:
    """Beside the SQLite file (data/ otherwise): one machine's processes all see it."""
    if database_url.startswith("sqlite:///"):
        base = Path(database_url[len("sqlite:///"):]).parent
    else:
        base = Path("data")
    return base / f"telegram-poller-{bot_id(token)}.lock"
