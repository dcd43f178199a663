"""What `valet serve` runs for a channel on Twilio (its `ServedChannel`, channels/spec.py): the
channel's webhooks and its sender. Nothing runs in the background: the outbox calls the
sender, Twilio posts to the webhooks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from aiohttp import web

from channels.twilio.webhooks import TwilioWebhooks


class Closing(Protocol):
    async def close(self) -> None: ...


SenderT = TypeVar("SenderT", bound=Closing)


@dataclass
class TwilioChannel(Generic[SenderT]):
    sender: SenderT
    webhook: TwilioWebhooks
    name: str = ""
    ready: bool = False
    status: str = "not started"

    def routes(self) -> list[web.RouteDef]:
        return self.webhook.routes()

    def web_app(self) -> web.Application:
        """The webhooks alone, as an aiohttp application (tests, or a server of its own)."""
        app = web.Application(client_max_size=self.webhook.limits.max_bytes)
        app.add_routes(self.routes())
        return app

    async def start(self) -> None:
        await self.prepare()
        self.ready = True  # nothing runs in the background: the outbox calls the sender
        self.status = "receiving by webhook"

    async def prepare(self) -> None:
        """What a process that only sends (a worker) needs first: nothing, unless the channel
        says so."""

    async def stop(self) -> None:
        """Take no new messages (a webhook arriving now is stored all the same: Twilio has
        sent it and would retry; the turn is left for the next start if it cannot run)."""
        self.ready = False
        self.status = "stopped"

    async def close(self) -> None:
        await self.sender.close()
