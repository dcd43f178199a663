"""The owner from configuration: a person reachable on the console and their listed ids.
Every process that receives messages makes sure of it before the first one (a web process
too: the access policy must know the owner)."""

from __future__ import annotations

from bot.clock import Clock
from bot.config import Settings
from bot.gateway.identity import IdentityStore
from bot.gateway.users import User, UserStore

OWNER_ID = "owner"
CONSOLE_ADDRESS = "local"


async def ensure_owner(settings: Settings, users: UserStore, identities: IdentityStore,
                       clock: Clock) -> User:
    now = clock.now()
    owner = await users.ensure(
        OWNER_ID, display_name=settings.owner.name, timezone=settings.timezone,
        is_owner=True, at=now)
    addresses = [("console", CONSOLE_ADDRESS)]
    addresses += [("telegram", i) for i in settings.owner.telegram_ids]
    addresses += [("sms", n) for n in settings.owner.phone_numbers]
    for channel, address in addresses:
        if await identities.resolve(channel, address) is None:
            await identities.link(channel, address, owner.id, at=now)
    return owner
