"""The secrets an MCP server is started with, read when it starts (never at import, never
logged): `env:VAR` from Valet's environment, `credential:NAME[.FIELD]` from the encrypted
credential store (the owner's credential NAME, field `token` unless named)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.mcp.config import REFERENCE, references

# The owner's id (bot.app.owner.OWNER_ID): a server is the deployment's, so are its secrets.
OWNER_ID = "owner"
DEFAULT_FIELD = "token"


class SecretMissing(Exception):
    """A reference that cannot be resolved; the message names it, never a value."""


@dataclass(frozen=True)
class SecretReader:
    environ: Mapping[str, str]
    credentials: Any = None  # bot.credentials.CredentialStore, or None (no database)

    async def resolve(self, values: Mapping[str, str]) -> dict[str, str]:
        """Every value with its references replaced; SecretMissing names the first missing."""
        resolved = {}
        for key, value in values.items():
            refs = references(value)
            if refs == [value]:
                resolved[key] = await self._one(value)
                continue
            text = value
            for ref in refs:
                text = text.replace("${" + ref + "}", await self._one(ref))
            resolved[key] = text
        return resolved

    async def missing(self, values: Mapping[str, str]) -> list[str]:
        """The references that cannot be resolved now (their names only)."""
        absent = []
        for value in values.values():
            for ref in references(value):
                try:
                    await self._one(ref)
                except SecretMissing:
                    absent.append(ref)
        return absent

    async def _one(self, ref: str) -> str:
        kind, _, name = ref.partition(":")
        if kind == "env":
            found = self.environ.get(name)
            if not found:
                raise SecretMissing(f"{ref}: the environment variable {name} is not set")
            return found
        service, _, field = name.partition(".")
        if self.credentials is None:
            raise SecretMissing(f"{ref}: no credential store (no database)")
        try:
            stored = await self.credentials.get(OWNER_ID, service)
        except Exception as err:  # locked (no key, wrong key): its own clear line
            raise SecretMissing(f"{ref}: {err}") from None
        value = (stored or {}).get(field or DEFAULT_FIELD)
        if not value:
            raise SecretMissing(f"{ref}: nothing stored (set it with `valet credentials set "
                                f"{service}`)")
        return value


__all__ = ["REFERENCE", "SecretMissing", "SecretReader"]
