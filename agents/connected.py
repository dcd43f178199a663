"""A person's connected service (calendar, email...): its stored secret for a tool call, and
whether the capability is on. One place for what every credential-backed capability says
when the key is missing, nothing is connected, or the stored secret cannot be opened."""

from __future__ import annotations

import os
from typing import Any

from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.credentials import KEY_ENV, CredentialsLocked, CredentialStore
from bot.tools.capabilities import CapabilityStatus


class NotConnected(Exception):
    """The person's service cannot be used; the message is safe to show (no secret)."""


async def connected_secret(ctx: ToolExecutionContext, service: str, *,
                           what: str) -> dict[str, str]:
    """The person's stored secret for `service` (`what` names it for people: "calendar",
    "email account"), or NotConnected saying what to do."""
    try:
        secret = await services_of(ctx).credentials.get(ctx.user_id, service)
    except CredentialsLocked as err:
        raise NotConnected(f"your {what} connection cannot be opened ({err})") from None
    if secret is None:
        raise NotConnected(f"no {what} is connected for this user; the owner connects one "
                           f"from the shell: valet connect {service} USER")
    return secret


async def connected_status(db: Any, service: str) -> CapabilityStatus:
    """On once someone has `service` connected and the key opens the stored secrets."""
    try:
        store = CredentialStore.from_env(db, os.environ)
    except Exception as err:
        return CapabilityStatus.failing(str(err))
    if not store.has_key:
        return CapabilityStatus.off(f"set {KEY_ENV}, then run `valet connect {service} USER`")
    if db is None:
        return CapabilityStatus.on()
    connected = await store.stored(service)
    if not connected:
        return CapabilityStatus.off(f"run `valet connect {service} USER`")
    try:
        await store.check_readable()
    except CredentialsLocked as err:
        return CapabilityStatus.failing(str(err))
    return CapabilityStatus.on(f"{len(connected)} connected")
