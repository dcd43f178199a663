"""CredentialStore: per person and service (calendar, email...), encrypted at rest.

Each secret is a small JSON object (URL, username, password, token) kept as a Fernet token.
The keys come only from the environment: VALET_SECRET_KEY holds one or more Fernet keys,
comma-separated; the first encrypts, every one decrypts (MultiFernet), so a key is rotated by
putting the new one first, running `valet credentials rotate`, then dropping the old one.

Fail closed: without a key (or with keys that open nothing) a stored credential is never
guessed at or skipped silently; reading it raises CredentialsLocked with one clear line.
Secrets are returned to code only; nothing here logs or renders them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from bot.config import ConfigError
from bot.db import Database

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

log = logging.getLogger(__name__)
KEY_ENV = "VALET_SECRET_KEY"
NO_KEY = (f"stored credentials cannot be read: {KEY_ENV} is not set (generate one with "
          "`valet credentials new-key`)")
WRONG_KEY = (f"stored credentials cannot be read: no key in {KEY_ENV} opens them (was the key "
             "changed? put the old key after the new one, comma-separated)")


class CredentialsLocked(ConfigError):
    """Stored credentials exist but cannot be read: no key, or not the right one."""


def _invalid_token() -> type[Exception]:
    from cryptography.fernet import InvalidToken  # (only with a key, which loaded it already)

    return InvalidToken


def parse_keys(raw: str | None) -> MultiFernet | None:
    """MultiFernet over the comma-separated keys; None when there is none; ConfigError (one
    line, without the key) when one is not a Fernet key."""
    keys = [k.strip() for k in (raw or "").split(",") if k.strip()]
    if not keys:
        return None
    from cryptography.fernet import Fernet, MultiFernet  # loaded only when a key is set

    fernets = []
    for i, key in enumerate(keys, 1):
        try:
            fernets.append(Fernet(key.encode()))
        except (ValueError, TypeError):
            raise ConfigError(f"{KEY_ENV}: key {i} of {len(keys)} is not a Fernet key (32 "
                              "url-safe base64-encoded bytes; `valet credentials new-key` "
                              "makes one)") from None
    return MultiFernet(fernets)


def new_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


@dataclass(frozen=True)
class StoredCredential:
    user_id: str
    service: str
    updated_at: datetime


class CredentialStore:
    def __init__(self, db: Database, keys: MultiFernet | None, *, locked: str = NO_KEY) -> None:
        self.db = db
        self._keys = keys  # set once at start-up; never per request
        self._locked = locked  # what a read says when there is no usable key

    @classmethod
    def from_env(cls, db: Database, env: Mapping[str, str]) -> CredentialStore:
        return cls(db, parse_keys(env.get(KEY_ENV)))

    @classmethod
    def tolerant(cls, db: Database, env: Mapping[str, str]) -> CredentialStore:
        """For the running app: a malformed key locks the credentials (each read says why)
        instead of stopping every other capability; doctor reports it as failing."""
        try:
            return cls.from_env(db, env)
        except ConfigError as err:
            log.error("credentials locked: %s", err)
            return cls(db, None, locked=f"stored credentials cannot be read: {err}")

    @property
    def has_key(self) -> bool:
        return self._keys is not None

    async def put(self, user_id: str, service: str, secret: Mapping[str, str],
                  at: datetime) -> None:
        if self._keys is None:
            raise CredentialsLocked(f"cannot store a credential: {KEY_ENV} is not set "
                                    "(generate one with `valet credentials new-key`)")
        token = self._keys.encrypt(json.dumps(dict(secret)).encode()).decode()
        await self.db.execute(
            "INSERT INTO credentials (user_id, service, secret, updated_at) VALUES ($1, $2, $3,"
            " $4) ON CONFLICT (user_id, service) DO UPDATE SET secret = excluded.secret,"
            " updated_at = excluded.updated_at", user_id, service, token, at)

    async def get(self, user_id: str, service: str) -> dict[str, str] | None:
        """The secret, None when the person has none for `service`; CredentialsLocked when
        there is one but it cannot be read."""
        token = await self.db.fetchval(
            "SELECT secret FROM credentials WHERE user_id = $1 AND service = $2",
            user_id, service)
        if token is None:
            return None
        return self._open(token)

    async def delete(self, user_id: str, service: str) -> bool:
        return await self.db.execute(
            "DELETE FROM credentials WHERE user_id = $1 AND service = $2",
            user_id, service) > 0

    async def stored(self, service: str | None = None) -> list[StoredCredential]:
        """What is stored (never the secrets), for doctor and the CLI."""
        rows = await self.db.fetch(
            "SELECT user_id, service, updated_at FROM credentials ORDER BY user_id, service")
        return [StoredCredential(r["user_id"], r["service"], r["updated_at"]) for r in rows
                if service is None or r["service"] == service]

    async def check_readable(self) -> int:
        """How many stored credentials the keys open; CredentialsLocked when one is not."""
        rows = await self.db.fetch("SELECT secret FROM credentials")
        for row in rows:
            self._open(row["secret"])
        return len(rows)

    async def rotate(self) -> int:
        """Re-encrypt every credential with the first key; how many were rewritten."""
        if self._keys is None:
            raise CredentialsLocked(NO_KEY)
        rows = await self.db.fetch("SELECT user_id, service, secret FROM credentials")
        async with self.db.transaction() as tx:
            for row in rows:
                try:
                    token = self._keys.rotate(row["secret"].encode()).decode()
                except _invalid_token():
                    raise CredentialsLocked(WRONG_KEY) from None
                await tx.execute(
                    "UPDATE credentials SET secret = $1 WHERE user_id = $2 AND service = $3",
                    token, row["user_id"], row["service"])
        return len(rows)

    def _open(self, token: str) -> dict[str, str]:
        if self._keys is None:
            raise CredentialsLocked(self._locked)
        try:
            return json.loads(self._keys.decrypt(token.encode()))
        except _invalid_token():
            raise CredentialsLocked(WRONG_KEY) from None
