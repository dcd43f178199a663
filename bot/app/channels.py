"""The channels `valet serve` runs, built on the narrow port (bot.gateway.door.ChannelHost),
never on the App: a channel sees the gateway's door, identities, the clock and its own store."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from bot.channel import ChannelSender
from bot.config import ConfigError, Settings
from bot.gateway.door import ChannelHost
from channels.registry import specs
from channels.spec import Building, ChannelSpec, ServedChannel
from persona import Persona

if TYPE_CHECKING:
    from bot.plumbing.spool import Spool

__all__ = ["Hosts", "ServedChannel", "configured_channels", "served_channel"]


class Hosts(Protocol):
    """What builds a channel: a `valet serve` process of any role (bot.app.root.App,
    bot.app.front.Front)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def persona(self) -> Persona: ...

    def channel_host(self) -> ChannelHost: ...

    def add_channel(self, sender: ChannelSender) -> None: ...


async def configured_channels(settings: Settings, app: Hosts,
                              env: Mapping[str, str] | None = None, *,
                              spool: Spool | None = None) -> list[ServedChannel]:
    """Every channel whose settings turn it on (its spec's `configured`: Telegram with
    VALET_TELEGRAM_TOKEN, SMS with VALET_TWILIO_ACCOUNT_SID; the rest of its settings are
    then required), in the registry's order. Each one's sender is registered with the
    outbox. `spool`: where a receiving process keeps webhooks while the database is away
    (bot.plumbing.spool)."""
    env = os.environ if env is None else env
    return [_built(app, spec, env, spool) for spec in specs(settings).configured(settings, env)
            if spec.build is not None]


def served_channel(app: Hosts, name: str, env: Mapping[str, str] | None = None, *,
                   spool: Spool | None = None) -> ServedChannel:
    """The channel called `name` on the app's door, its sender registered with the outbox
    (ConfigError: its settings are missing, or no such channel)."""
    spec = specs(app.settings).named(name)
    if spec is None or spec.build is None:
        raise ConfigError(f"no channel {name!r} that valet serve runs")
    return _built(app, spec, os.environ if env is None else env, spool)


def _built(app: Hosts, spec: ChannelSpec, env: Mapping[str, str],
           spool: Spool | None) -> ServedChannel:
    assert spec.build is not None
    built = spec.build(Building(replace(app.channel_host(), spool=spool), app.settings, env,
                                emoji=app.persona.emoji))
    app.add_channel(built.sender)
    return built.served
