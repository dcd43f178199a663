"""An app with the WhatsApp channel, the fake Twilio (with its WhatsApp side) and the fake LLM,
and a person writing on WhatsApp through signed webhooks over real HTTP."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from bot.app import App
from bot.app.channels import served_channel
from bot.config.policies import AccessSettings, ChannelAccess
from channels.whatsapp.channel import WhatsAppChannel
from channels.whatsapp.settings import WhatsAppSettings
from tests.fakes.fake_twilio import FakeTwilio, SentMessage, post_signed
from tests.fakes.fake_whatsapp import whatsapp_params

PUBLIC_URL = "https://valet.example.com"
FROM_NUMBER = "+14155238886"  # the sandbox's
ALICE = "+12125550123"
AUTH_TOKEN = "test-auth-token"
ACCOUNT_SID = "AC" + "2" * 32

_sids = itertools.count(1)


def new_sid() -> str:
    return f"SM{next(_sids):032d}"


@dataclass
class WhatsAppWorld:
    app: App
    channel: WhatsAppChannel
    twilio: FakeTwilio
    server: TestServer
    http: aiohttp.ClientSession

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))

    async def write(self, body: str, *, sender: str = ALICE, sid: str | None = None,
                    media: list[tuple[str, str]] | None = None,
                    button: tuple[str, str] | None = None, signature: str | None = None,
                    profile_name: str = "Alice") -> aiohttp.ClientResponse:
        """The person writes on WhatsApp: Twilio posts a signed webhook."""
        params = whatsapp_params(sender, body, sid=sid or new_sid(), to=FROM_NUMBER,
                                 account_sid=ACCOUNT_SID, media=media, button=button,
                                 profile_name=profile_name)
        response = await post_signed(self.http, self.url("/whatsapp/inbound"),
                                     PUBLIC_URL + "/whatsapp/inbound", params, AUTH_TOKEN,
                                     signature=signature)
        await response.read()
        return response

    async def idle(self) -> None:
        await asyncio.wait_for(self.app.gateway.wait_idle(), 60)

    def sent_to(self, number: str = ALICE) -> list[SentMessage]:
        """What Twilio accepted for the person, in order (those it failed later too)."""
        return [m for m in self.twilio.sent if m.to == "whatsapp:" + number]

    def got(self, number: str = ALICE) -> list[str]:
        """What reached the person on WhatsApp (not what Twilio failed with 63016)."""
        return [m.body for m in self.sent_to(number)
                if m.sid not in self.twilio.whatsapp.undelivered]


def whatsapp_env(twilio: FakeTwilio) -> dict[str, str]:
    return {"VALET_TWILIO_ACCOUNT_SID": twilio.account_sid,
            "VALET_TWILIO_AUTH_TOKEN": twilio.auth_token,
            "VALET_TWILIO_API_URL": twilio.base_url}


async def whatsapp_world(app_factory: Any, *, allow: tuple[str, ...] = (ALICE,),
                         policy: str = "allowlist", templates: dict[str, str] | None = None,
                         twilio: FakeTwilio | None = None, **overrides: Any
                         ) -> tuple[WhatsAppWorld, Any]:
    """The world, and a closer to await at the end."""
    twilio = twilio or await FakeTwilio(ACCOUNT_SID, AUTH_TOKEN).__aenter__()
    access = overrides.pop("access", AccessSettings(channels={
        "whatsapp": ChannelAccess(policy=policy, allow=list(allow))}))
    app = await app_factory(public_url=PUBLIC_URL, access=access, whatsapp=WhatsAppSettings(
        from_number=FROM_NUMBER, templates=templates or {}), **overrides)
    channel = served_channel(app, "whatsapp", env=whatsapp_env(twilio))
    assert isinstance(channel, WhatsAppChannel)
    await app.start()
    await channel.start()
    server = TestServer(channel.web_app())
    await server.start_server()
    twilio.whatsapp.deliver_reports(str(server.make_url("")), PUBLIC_URL)
    http = aiohttp.ClientSession()
    world = WhatsAppWorld(app, channel, twilio, server, http)

    async def close() -> None:
        await http.close()
        await server.close()
        await channel.stop()
        await channel.close()
        await twilio.__aexit__(None, None, None)

    return world, close
