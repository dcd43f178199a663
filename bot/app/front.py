"""The web role's composition: what a process needs to check, store and acknowledge.

A `valet serve --role web` process verifies a webhook, stores the message in the inbox (the
access policy decides who it is for; a stranger's pairing reply and a channel's own answers,
STOP and HELP, are queued here too), answers a button press at once, announces the row on
the work stream and acknowledges. Its stores, outbound side and gateway are built by the
functions every role's are (one composition); it builds no LLM client, no orchestrator, no
tool registry and no trigger engine: its gateway is handed every turn's work (`Relay`), and a
turn asked of it is a bug (bot.app.inbound.no_turns raises). Events are stored before their
202 and announced to the schedulers. The workers deliver what it queued (it tells them with
a wake-up signal).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from bot.app.database import open_database, pending
from bot.app.inbound import build_gateway
from bot.app.outbound import build_outbound
from bot.app.owner import ensure_owner
from bot.app.plane import Plane, build_plane
from bot.app.roles import Roles
from bot.app.stores import build_stores
from bot.approvals.buttons import ButtonAnswers
from bot.approvals.store import ApprovalStore
from bot.budget import Spending
from bot.channel import ChannelSender, MenuCommand
from bot.config import Settings
from bot.contracts.clock import Clock, SystemClock
from bot.db import Database
from bot.db.sqlite_owner import SQLiteOwner, claim
from bot.gateway.door import ChannelHost
from bot.gateway.gateway import Gateway
from bot.gateway.outbound import Outbound
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.plumbing.metrics import Metrics
from channels.registry import specs
from persona import Persona, load_persona
from triggers.event_store import StoredEventBus


class NoMenu:
    """The web role sets no command menu: the workers, which have the command table, do."""

    def menu(self, channel: str) -> list[MenuCommand]:
        return []


@dataclass(frozen=True)
class WebGround:
    """What the web role builds its parts on (bot.app.base.Ground): no models, no registry."""

    settings: Settings
    clock: Clock
    persona: Persona
    plane: Plane
    db: Database
    roles: Roles
    spending: Spending


@dataclass
class Front:
    settings: Settings
    db: Database
    clock: Clock
    persona: Persona
    users: UserStore
    identities: IdentityStore
    access: AccessControl  # with the owner's claim code: a web process answers it
    outbound: Outbound
    gateway: Gateway  # the door only: receive, answer at the door, give up
    approval_store: ApprovalStore
    events: StoredEventBus  # POST /events: stored, then the schedulers are told
    plane: Plane
    metrics: Metrics = field(default_factory=Metrics)
    roles: Roles = field(default_factory=lambda: Roles.of(["web"]))
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _owner: SQLiteOwner | None = None

    @property
    def whole(self) -> None:
        """A web process has no turn's parts (bot.app.serve.Served.whole)."""
        return None

    @classmethod
    async def build(cls, settings: Settings, *, migrate: bool | Literal["check"] = "check",
                    clock: Clock | None = None) -> Front:
        """The stores, the outbound side and the gateway, built by the same functions as
        every role's (bot.app.stores, bot.app.outbound, bot.app.inbound), with no turn's
        parts: the gateway hands every row to the work stream."""
        clock = clock or SystemClock()
        channels = specs(settings)
        persona = load_persona(settings.persona, channels=channels.names(),
                               line_groups=channels.line_groups())
        plane = await build_plane(settings, serving=True)
        assert plane.relay is not None, "the web role needs Redis (bot.app.roles.check_roles)"
        try:
            db = await open_database(settings.database_url, migrate=migrate, wait=True)
        except BaseException:
            await plane.close()
            raise
        roles = Roles.of(["web"])
        ground = WebGround(settings, clock, persona, plane, db, roles, Spending(db))
        stores = build_stores(ground)
        outbound = build_outbound(ground, stores)
        buttons = ButtonAnswers(stores.approvals, clock, lines=persona.lines)
        gateway = build_gateway(ground, stores, outbound, buttons.answer_button, turns=None)
        front = cls(settings=settings, db=db, clock=clock, persona=persona, users=stores.users,
                    identities=stores.identities, access=stores.access, outbound=outbound,
                    gateway=gateway, approval_store=stores.approvals,
                    events=StoredEventBus(db, clock, signals=plane.signals), plane=plane,
                    roles=roles)
        if pending(db) is None:  # else once `valet serve` has reached it
            await front.ensure_owner()
        return front

    async def ensure_owner(self) -> None:
        await ensure_owner(self.settings, self.users, self.identities, self.clock)

    def channel_host(self) -> ChannelHost:
        return ChannelHost(door=self.gateway, identities=self.identities, clock=self.clock,
                           db=self.db, lines=self.persona.lines, words=self.persona.words,
                           commands=NoMenu(), health=self.outbound)

    def add_channel(self, sender: ChannelSender) -> None:
        self.outbound.add_channel(sender)

    async def start(self) -> None:
        self._owner = claim(self.settings.database_url)  # (a web role is never on SQLite)

    async def close(self) -> None:
        for closer in self.closers:
            await closer()
        await self.plane.close()
        await self.db.close()
        if self._owner is not None:
            self._owner.release()
