"""A channel described once: its `ChannelSpec`, which every part of Valet that deals with
channels reads instead of naming one (channels/registry.py lists them; docs/extending.md,
"Adding a channel").

A spec module imports nothing heavy (no python-telegram-bot, no twilio): what needs more is
reached through the spec's functions, which import it when called, so a deployment without a
channel never loads it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from bot.channel import ChannelSender
from bot.config import Settings
from bot.config.channel_settings import ChannelSection
from bot.contracts.channels import ChannelTraits
from bot.db import Database
from bot.gateway.door import ChannelHost
from bot.plumbing.metrics import Reading
from persona.line_group import LineGroup

if TYPE_CHECKING:  # only valet doctor and valet onboard load these
    from bot.people.strangers import StrangerLimits
    from bot.setup.onboarding import Step
    from bot.setup.report import MenuSource, Report

Env = Mapping[str, str]


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


@dataclass(frozen=True)
class Building:
    """What a channel is built from in `valet serve` (bot.app.channels)."""

    host: ChannelHost  # the gateway's door, identities, the clock, its store's database...
    settings: Settings
    env: Env
    emoji: bool = False  # the persona lets emoji through (a plain-text channel drops them)


@dataclass(frozen=True)
class Built:
    served: ServedChannel  # what `valet serve` runs: routes, start, stop
    sender: ChannelSender  # what the outbox delivers through (registered by the caller)


@dataclass(frozen=True)
class Doctor:
    """What `valet doctor` checks of the channel, each function importing what it needs."""

    # The channel as its service sees it (credentials, webhook, menu...), with --fix's repairs.
    check: Callable[[Settings, Env, Report, MenuSource], Awaitable[None]]
    # What it may cost, when it is on (where it may send, its limits); None: nothing.
    costs: Callable[[Settings, Report], None] | None = None


@dataclass(frozen=True)
class Usage:
    """What the channel's messages cost, in its own unit (SMS: segments)."""

    unit: str  # "SMS segments"
    one: str  # one of them: "segment"
    priced_by: str  # the setting that prices them: "sms.price_per_segment"
    # Units sent per person and day, between two instants, days in the named zone.
    daily: Callable[[Database, datetime, datetime, str], Awaitable[dict[tuple[str, date], int]]]
    # Units sent to a person since an instant (`valet users show`: this month).
    since: Callable[[Database, str, datetime], Awaitable[int]]
    price: Callable[[Settings], float]  # one unit's default price (an estimate) in dollars


def _never(settings: Settings, env: Env) -> str | None:
    return None


def _one_person(address: str) -> bool:
    return False


@dataclass(frozen=True)
class ChannelSpec:
    # What it is and can do, declared once: the core is told it (bot.contracts.channels),
    # and its sender carries it (`ChannelSender.traits`, the same record).
    traits: ChannelTraits
    address: str  # what its addresses are, in words ("an E.164 phone number")
    # Whether this deployment runs it (its token or account set); what turns it on, as an
    # operator is told ("set VALET_TELEGRAM_TOKEN").
    configured: Callable[[Settings, Env], bool]
    turn_on: str
    # Whether an address is a chat several people read (a Telegram group): what is meant for
    # one person only (a sign-in link) never goes there.
    group_chat: Callable[[str], bool] = _one_person
    # The channel `valet serve` runs, built from its settings; None: not one `valet serve`
    # runs (the terminal's, `valet chat`).
    build: Callable[[Building], Built] | None = None
    # Its own section of valet.yaml, declared in its package ("whatsapp:"; the loader checks
    # it with the rest: channels.registry.load_channel_settings); None: none of its own.
    section: ChannelSection[Any] | None = None
    # Its key under `owner:` in valet.yaml: the owner's addresses on it (telegram_ids).
    owner_key: str | None = None
    # What of it needs a public https address, when on ("SMS", "the Telegram webhook").
    public_url_for: Callable[[Settings, Env], str | None] = _never
    # How the owner sends the one-time claim code here ("text {code} to +1555..."), given
    # the running channel; None: it cannot be claimed on.
    claim: Callable[[ServedChannel, Settings], str] | None = None
    # The limits on what a sender not let in may make Valet send there (a channel that
    # costs money); None: none beyond the access policy.
    strangers: Callable[[Settings], StrangerLimits] | None = None
    doctor: Doctor | None = None
    onboard: Callable[[], Step] | None = None  # its step of `valet onboard`, made then
    migrations: str | None = None  # the package whose migrations make its tables
    webhook_prefix: str | None = None  # the first segment of its webhooks' paths (counted)
    # Its own loggers, whose start-up lines `valet serve` shows; and a library's, kept to
    # warnings (a request line would show a URL with the token in it).
    loggers: tuple[str, ...] = ()
    quiet_loggers: tuple[str, ...] = ()
    # The gauges it adds to /metrics, read at each scrape.
    readings: Callable[[Database], Awaitable[list[Reading]]] | None = None
    usage: Usage | None = None
    # Its own words (channels/<name>/lines.py, translations beside them): a persona rewords
    # them (load_persona's line_groups) and the channel says them through `host.words`.
    lines: type[LineGroup] | None = None

    @property
    def name(self) -> str:
        return self.traits.name

    @property
    def title(self) -> str:
        return self.traits.title

    def owners(self, settings: Settings) -> list[str]:
        """The owner's addresses on it that valet.yaml lists (owner.<owner_key>)."""
        found = getattr(settings.owner, self.owner_key, []) if self.owner_key else []
        return [str(address) for address in found]
