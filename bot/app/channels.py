"""The channels `valet serve` runs, built on the narrow port (bot.gateway.door.ChannelHost),
never on the App: a channel sees the gateway's door, identities, the clock and its own store."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from bot.channel import Channel
from bot.config import Settings
from bot.gateway.door import ChannelHost
from persona import Persona

if TYPE_CHECKING:  # imported when SMS is configured: a deployment without it never loads it
    from bot.plumbing.spool import Spool
    from channels.sms.channel import SmsChannel


class ServedChannel(Protocol):
    """What a channel gives `valet serve`: its HTTP routes (webhooks) and its lifecycle."""

    name: str

    @property
    def ready(self) -> bool:
        """Receiving works now, as far as this process can tell."""
        ...

    @property
    def status(self) -> str:
        """What receiving does now, in a few words (/readyz says it when not ready)."""
        ...

    def routes(self) -> list[web.RouteDef]: ...

    async def start(self) -> None:
        """Begin receiving (polling, registering a webhook): a process that receives."""
        ...

    async def prepare(self) -> None:
        """What a process that only sends does at start (Telegram: its command menu)."""
        ...

    async def stop(self) -> None:
        """Take no new messages; replies can still be sent."""
        ...

    async def close(self) -> None:
        """Release everything, after the last reply went out."""
        ...


class Hosts(Protocol):
    """What builds a channel: a `valet serve` process of any role (bot.app.root.App,
    bot.app.front.Front)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def persona(self) -> Persona: ...

    def channel_host(self) -> ChannelHost: ...

    def add_channel(self, sender: Channel) -> None: ...


async def configured_channels(settings: Settings, app: Hosts,
                              env: Mapping[str, str] | None = None, *,
                              spool: Spool | None = None) -> list[ServedChannel]:
    """Every channel whose settings turn it on: Telegram with VALET_TELEGRAM_TOKEN, SMS with
    VALET_TWILIO_ACCOUNT_SID (the rest of its settings are then required). Each one's sender
    is registered with the outbox. `spool`: where a receiving process keeps webhooks while
    the database is away (bot.plumbing.spool)."""
    env = os.environ if env is None else env
    channels: list[ServedChannel] = []
    if settings.telegram.token:
        from channels.telegram.service import TelegramService

        telegram = TelegramService.build(replace(app.channel_host(), spool=spool), settings)
        app.add_channel(telegram.channel)
        channels.append(telegram)
    if env.get("VALET_TWILIO_ACCOUNT_SID"):
        channels.append(sms_channel(app, env, spool=spool))
    return channels


def sms_channel(app: Hosts, env: Mapping[str, str] | None = None, *,
                spool: Spool | None = None) -> SmsChannel:
    """The SMS channel on the app's door, its sender registered with the outbox."""
    from channels.sms.channel import build_sms_channel

    channel = build_sms_channel(replace(app.channel_host(), spool=spool), app.settings, env,
                                emoji=app.persona.emoji)
    app.add_channel(channel.sender)
    return channel
