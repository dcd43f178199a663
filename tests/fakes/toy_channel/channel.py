"""The toy channel's adapter: its webhook in (a message handed to the gateway's door once it
is stored), its sender out (each outbox message posted to the toy service, with what waits
for the person's answer written under it: the service has no buttons, so a card is a few
lines of text, answered in words like any message)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from bot.channel import ChannelSender, PermanentSendError, TransientSendError
from bot.contracts.envelopes import ApprovalPrompt, IncomingMessage, OutboundMessage
from bot.gateway.door import ChannelHost
from persona.lines import DEFAULT, Lines, fill
from tests.fakes.toy_channel.traits import NAME, TRAITS

INBOUND_PATH = "/toy/inbound"


def rendered(message: OutboundMessage, lines: Lines = DEFAULT) -> str:
    """The message's text, then each prompt waiting for the person: what it asks, its
    arguments, and how to answer (the persona's words for a channel without buttons)."""
    return "\n".join([*([message.text] if message.text else []),
                      *(_prompt(p, lines) for p in message.prompts)])


def _prompt(prompt: ApprovalPrompt, lines: Lines) -> str:
    n = prompt.position
    ask = lines.terminal_prompt_changeable if prompt.allow_modification \
        else lines.terminal_prompt
    return "\n".join([f"{n}. {prompt.summary} (code {prompt.code})",
                      *(f"   {k}: {v}" for k, v in prompt.details
                        if f"{k}: {v}" not in prompt.summary),
                      "   " + fill(ask, n=n)])


class ToySender(ChannelSender):
    """What the outbox delivers through: one POST to the toy service a message. Only `send`
    is written: what the toy service cannot do (edit, buttons, typing, progress) the base
    does as nothing, as its TRAITS say."""

    traits = TRAITS

    def __init__(self, api_url: str, *, lines: Lines = DEFAULT) -> None:
        self.api_url = api_url.rstrip("/")
        self.lines = lines  # how a prompt asks for its answer
        self._http: aiohttp.ClientSession | None = None

    async def send(self, message: OutboundMessage) -> str | None:
        if self._http is None:
            self._http = aiohttp.ClientSession()
        try:
            async with self._http.post(f"{self.api_url}/messages", json={
                    "to": message.address, "text": rendered(message, self.lines)}) as response:
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
