"""The web role's composition: what a process needs to check, store and acknowledge.

A `valet serve --role web` process verifies a webhook, stores the message in the inbox (the
access policy decides who it is for; a stranger's pairing reply and a channel's own answers,
STOP and HELP, are queued here too), answers a button press at once, announces the row on
the work stream and acknowledges. It builds no LLM client, no orchestrator, no tool registry
and no trigger engine: its gateway is handed every turn's work (`Relay`), and a turn asked of
it is a bug (`_no_turns` raises). Events are stored before their 202 and announced to the
schedulers. The workers deliver what it queued (it tells them with a wake-up signal).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from bot.app.budget import pairing_notices
from bot.app.database import open_database, pending
from bot.app.owner import access_with_claims, ensure_owner
from bot.app.plane import Plane, build_plane
from bot.app.roles import Roles
from bot.approvals.buttons import ButtonAnswers
from bot.approvals.store import ApprovalStore
from bot.channel import MenuCommand
from bot.config import Settings
from bot.contracts.clock import Clock, SystemClock
from bot.contracts.envelopes import Reply
from bot.db import Database
from bot.db.sqlite_owner import SQLiteOwner, claim
from bot.gateway.delivery import ChannelSender, OutboxDeliverer
from bot.gateway.door import ChannelHost
from bot.gateway.gateway import Gateway, GatewayDeps
from bot.gateway.health import ChannelHealth
from bot.gateway.inbox import InboxStore
from bot.gateway.notify import Notifier
from bot.gateway.outbound import Outbound
from bot.gateway.outbox import OutboxStore
from bot.memory.history import HistoryStore
from bot.people.access import AccessControl
from bot.people.identity import IdentityStore
from bot.people.users import UserStore
from bot.plumbing.metrics import Metrics
from bot.turn.media import MediaReader
from channels.registry import specs
from persona import Persona, load_persona
from triggers.event_store import StoredEventBus


class NoMenu:
    """The web role sets no command menu: the workers, which have the command table, do."""

    def menu(self, channel: str) -> list[MenuCommand]:
        return []


async def _no_turns(*args: Any, **kwargs: Any) -> Reply:
    raise RuntimeError("a web process runs no turn: its rows go to the work stream")


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

    @classmethod
    async def build(cls, settings: Settings, *, migrate: bool | Literal["check"] = "check",
                    clock: Clock | None = None) -> Front:
        clock = clock or SystemClock()
        persona = load_persona(settings.persona, channels=specs(settings).names())
        plane = await build_plane(settings, serving=True)
        assert plane.relay is not None, "the web role needs Redis (bot.app.roles.check_roles)"
        try:
            db = await open_database(settings.database_url, migrate=migrate, wait=True)
        except BaseException:
            await plane.close()
            raise
        users = UserStore(db)
        identities = IdentityStore(db, users)
        access = access_with_claims(settings, db, identities, persona.lines)
        senders: dict[str, ChannelSender] = {}
        outbox = OutboxStore(db)
        # One view of which channels work: what /readyz says is what the notices route by.
        health = ChannelHealth(settings.delivery_policy().channel_probe_seconds)
        outbound = Outbound(
            db=db, clock=clock, users=users, outbox=outbox,
            deliverer=OutboxDeliverer(outbox, senders, clock, settings.delivery_policy(),
                                      health=health),
            notifier=Notifier(db, users, identities, outbox, clock, senders, health=health),
            senders=senders, wake_elsewhere=plane.relay.wake_elsewhere(),
            channel_down_line=lambda: persona.lines.channel_down)
        approvals = ApprovalStore(
            db, timeout=timedelta(minutes=settings.approvals.timeout_minutes),
            lease=timedelta(seconds=settings.approvals.lease_seconds))
        lines = persona.lines
        gateway = Gateway(GatewayDeps(
            db=db, clock=clock, users=users, identities=identities, access=access,
            inbox=InboxStore(db), outbound=outbound, history=HistoryStore(db),
            handle_message=_no_turns, locks=plane.locks, failure_line=lines.llm_unavailable,
            voice_line=lines.voice_unreadable, unreadable_line=lines.message_unreadable,
            media=MediaReader(None),
            answer_button=ButtonAnswers(approvals, clock, lines=lines).answer_button,
            mid_turn=settings.gateway.mid_turn, relay=plane.relay,
            pairing_notices=pairing_notices(settings, db, clock, outbound, lines)))
        front = cls(settings=settings, db=db, clock=clock, persona=persona, users=users,
                   identities=identities, access=access, outbound=outbound, gateway=gateway,
                   approval_store=approvals,
                   events=StoredEventBus(db, clock, signals=plane.signals), plane=plane)
        if pending(db) is None:  # else once `valet serve` has reached it
            await front.ensure_owner()
        return front

    async def ensure_owner(self) -> None:
        await ensure_owner(self.settings, self.users, self.identities, self.clock)

    def channel_host(self) -> ChannelHost:
        return ChannelHost(door=self.gateway, identities=self.identities, clock=self.clock,
                           db=self.db, lines=self.persona.lines, commands=NoMenu(),
                           health=self.outbound)

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
