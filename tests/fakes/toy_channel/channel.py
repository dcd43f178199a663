"""The toy channel's adapter: its webhook in (a message handed to the gateway's door once it
is stored), its sender out (each outbox message posted to the toy service, with what waits
for the person's answer written under it: the service has no buttons, so a card is a few
lines of text, answered in words like any message)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from bot.channel import ChannelSender, PermanentSendError, TransientSendError
from bot.contracts.envelopes import IncomingMessage, OutboundMessage
from bot.gateway.door import ChannelHost
from channels.plain_cards import cards_in_words
from persona.lines import DEFAULT, Lines
from tests.fakes.toy_channel.traits import NAME, TRAITS

INBOUND_PATH = "/toy/inbound"


def rendered(message: OutboundMessage, lines: Lines = DEFAULT) -> str:
    """The message's text, then the prompts waiting for the person in plain words: what each
    asks, its arguments, and how to answer (channels.plain_cards, as SMS and WhatsApp's
    fallback say them)."""
    cards = cards_in_words(message.prompts, lines) if message.prompts else ""
    return "\n".join(part for part in (message.text, cards) if part)


class ToySender(ChannelSender):
    """What the outbox delivers through: one POST to the toy service a message. Only `send`
    is written: what the toy service cannot do (edit, buttons, typing, progress) the base
    does as nothing, as its TRAITS say."""

    traits = TRAITS

    def __init__(self, api_url: str, *, lines: Lines = DEFAULT,
                 signature: str | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.lines = lines  # how a prompt asks for its answer
        self.signature = signature  # its section's (tests/fakes/toy_channel/settings.py)
        self._http: aiohttp.ClientSession | None = None

    async def send(self, message: OutboundMessage) -> str | None:
        if self._http is None:
            self._http = aiohttp.ClientSession()
        try:
            posted = {"to": message.address, "text": rendered(message, self.lines)}
            if self.signature:
                posted["signature"] = self.signature
            async with self._http.post(f"{self.api_url}/messages", json=posted) as response:
                if response.status >= 500:
                    raise TransientSendError(f"the toy service answered {response.status}")
                if response.status >= 400:
                    raise PermanentSendError(f"the toy service refused: {response.status}")
                return str((await response.json())["id"])
        except aiohttp.ClientError as err:
            raise TransientSendError(f"the toy service is out of reach: {err}") from err

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
