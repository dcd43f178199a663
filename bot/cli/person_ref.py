"""A person named on the command line: their user id ("u_…") or one of their addresses as
"channel:address" ("sms:+15551230000", "telegram:42"). Every `valet` command that takes a
person reads it here, so the two forms mean the same everywhere."""

from __future__ import annotations

from bot.contracts.people import User
from bot.people.identity import IdentityStore
from bot.people.users import UserStore


async def find_person(users: UserStore, identities: IdentityStore, ref: str) -> User | None:
    """The person `ref` names, or None when nobody is known by it."""
    if ":" in ref and not ref.startswith("u_"):
        channel, address = ref.split(":", 1)
        return await identities.resolve(channel, address)
    return await users.get(ref)
