"""The owner as the configuration knows them: a person reachable on the console and their
listed ids (every process that receives messages makes sure of it before the first one: a
web process too, the access policy must know the owner), a claimed address written into
valet.yaml (`owner.telegram_ids`, `owner.phone_numbers`), and whether any owner address is
known at all (if not, `valet serve` opens a claim code: bot.people.claims)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path

from bot.config import Settings
from bot.contracts.clock import Clock
from bot.contracts.people import User
from bot.db import Database
from bot.people.access import AccessControl
from bot.people.claims import OwnerClaims, OwnerRecorder
from bot.people.guesses import guess_limiter
from bot.people.identity import IdentityStore
from bot.people.strangers import StrangerReplies
from bot.people.users import UserStore
from channels.registry import specs
from persona.lines import Lines

log = logging.getLogger(__name__)

OWNER_ID = "owner"
CONSOLE_ADDRESS = "local"


def owner_keys(settings: Settings) -> dict[str, tuple[str, str]]:
    """Where valet.yaml lists the owner's addresses on each channel that has them (its spec's
    `owner_key`: owner.telegram_ids, owner.phone_numbers), by channel."""
    return {spec.name: ("owner", spec.owner_key) for spec in specs(settings) if spec.owner_key}


def access_with_claims(settings: Settings, db: Database, identities: IdentityStore,
                       lines: Lines) -> AccessControl:
    """The access policy of a process that receives messages, with the owner's claim code
    (the first sender of the code serving prints becomes the owner, written to valet.yaml)."""
    return AccessControl(db, identities, settings.access, settings.timezone, lines=lines,
                         claims=OwnerClaims(db, identities, guess_limiter(settings.access, db),
                                            OWNER_ID, welcome=lines.owner_claimed,
                                            record=record_owner(settings)),
                         strangers=stranger_replies(settings, db))


async def ensure_owner(settings: Settings, users: UserStore, identities: IdentityStore,
                       clock: Clock) -> User:
    now = clock.now()
    owner = await users.ensure(
        OWNER_ID, display_name=settings.owner.name, timezone=settings.timezone,
        is_owner=True, at=now)
    addresses = [("console", CONSOLE_ADDRESS)]
    for spec in specs(settings):
        addresses += [(spec.name, a) for a in spec.owners(settings)]
    for channel, address in addresses:
        if await identities.resolve(channel, address) is None:
            await identities.link(channel, address, owner.id, at=now)
    return owner


def record_owner(settings: Settings) -> OwnerRecorder:
    """Writes a claimed address into the valet.yaml in use (comments and order kept); the
    database link is made by the claim itself, so without a file (or a read-only one) the
    owner is still the owner, and the log says what to add by hand."""
    async def record(channel: str, address: str) -> None:
        keys = owner_keys(settings).get(channel)
        if keys is None:
            return
        key = ".".join(keys)
        path = Path(settings.source)
        if settings.source == "<defaults>" or not await asyncio.to_thread(path.is_file):
            log.warning("no valet.yaml to record the owner in: add %s: ['%s'] to yours",
                        key, address)
            return
        from bot.config.yaml_edit import add_to_list  # ruamel: only when a claim is written

        await asyncio.to_thread(add_to_list, path, keys, address)
        log.warning("recorded the owner in %s: %s: %s", path, key, address)

    return record


async def owner_addresses(identities: IdentityStore, owner_id: str) -> list[str]:
    """The owner's addresses a channel can reach (the terminal's does not count)."""
    return [f"{i.channel}:{i.address}" for i in await identities.of_user(owner_id)
            if i.channel != "console"]


async def open_claim_if_ownerless(claims: OwnerClaims, identities: IdentityStore,
                                  owner_id: str, reach: list[str], at: datetime) -> str | None:
    """With no owner address known and a channel to claim on (`reach`: how to write to
    Valet there), the line `valet serve` prints with the one-time code; None (and any open
    code closed) once the owner has an address."""
    if await owner_addresses(identities, owner_id):
        await claims.close(at)
        return None
    if not reach:
        return None
    code = await claims.open(at)
    ways = " or ".join(way.format(code=code) for way in reach)
    return (f"no owner is configured: to become the owner, {ways}. The first sender of the "
            "code becomes the owner and it is recorded in valet.yaml; the code then stops "
            "working.")


def stranger_replies(settings: Settings, db: Database) -> StrangerReplies:
    """A channel whose replies cost money (SMS) limits what strangers get there (its spec's
    `strangers`)."""
    return StrangerReplies(db, {spec.name: spec.strangers(settings) for spec in specs(settings)
                                if spec.strangers is not None})
