"""The toy channel's adapter: its webhook in (a message handed to the gateway's door once it
is stored), its sender out (each outbox message posted to the toy service)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from bot.channel import ChannelFeatures, PermanentSendError, TransientSendError
from bot.contracts.envelopes import IncomingMessage, LoopEvent, OutboundMessage
from bot.gateway.door import ChannelHost

NAME = "toy"
INBOUND_PATH = "/toy/inbound"


class ToySender:
    """What the outbox delivers through: one POST to the toy service a message."""

    name = NAME
    features = ChannelFeatures(max_chars=2000)

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url.rstrip("/")
        self._http: aiohttp.ClientSession | None = None

    async def send(self, message: OutboundMessage) -> str | None:
        if self._http is None:
            self._http = aiohttp.ClientSession()
        try:
            async with self._http.post(f"{self.api_url}/messages", json={
                    "to": message.address, "text": message.text}) as response:
                if response.status >= 500:
                    raise TransientSendError(f"the toy service answered {response.status}")
                if response.status >= 400:
                    raise PermanentSendError(f"the toy service refused: {response.status}")
                return str((await response.json())["id"])
        except aiohttp.ClientError as err:
            raise TransientSendError(f"the toy service is out of reach: {err}") from err

    async def edit(self, address: str, message_id: str, text: str) -> None:
        """The toy service cannot change a message it delivered."""

    async def answer_button(self, answer_ref: str, text: str) -> None:
        """No buttons: approvals are answered in words."""

    async def typing(self, address: str) -> None:
        """No typing indicator."""

    async def progress(self, address: str, event: LoopEvent) -> None:
        """Nothing shown while a turn runs."""

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()


class ToyChannel:
    """What `valet serve` runs for the toy channel (a channels.spec.ServedChannel)."""

    name = NAME

    def __init__(self, host: ChannelHost, sender: ToySender) -> None:
        self.host = host
        self.sender = sender
        self.ready = False
        self.status = "not started"

    def routes(self) -> list[web.RouteDef]:
        return [web.post(INBOUND_PATH, self._inbound)]

    async def _inbound(self, request: web.Request) -> web.Response:
        body = await request.json()
        await self.host.door.receive(IncomingMessage(
            channel=NAME, address=str(body["from"]), external_id=str(body["id"]),
            text=str(body["text"]), received_at=self.host.clock.now()))
        return web.json_response({"stored": True})  # the message is durable now

    async def start(self) -> None:
        self.ready, self.status = True, "receiving by webhook"

    async def prepare(self) -> None:
        """A process that only sends has nothing to prepare."""

    async def stop(self) -> None:
        self.ready, self.status = False, "stopped"

    async def close(self) -> None:
        await self.sender.close()
