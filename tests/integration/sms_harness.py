"""An app with the SMS channel, the fake Twilio REST server and the fake LLM, and a person
texting it through signed webhooks over real HTTP."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from bot.app import App
from bot.app.channels import served_channel
from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings, ChannelAccess
from channels.sms.channel import SmsChannel
from tests.fakes.fake_twilio import FakeTwilio, inbound_params, post_signed

PUBLIC_URL = "https://valet.example.com"
FROM_NUMBER = "+15005550006"
ALICE = "+12125550123"  # New York
AUTH_TOKEN = "test-auth-token"
ACCOUNT_SID = "AC" + "1" * 32

_sids = itertools.count(1)

# An outbox row with what the SMS channel keeps of it (its own table): cost and delivery.
OUTBOX_ROWS = ("SELECT o.*, s.segments, s.encoding, s.delivery_status, s.delivery_error"
               " FROM outbox o LEFT JOIN sms_messages s ON s.outbox_id = o.id")


def new_sid() -> str:
    return f"SM{next(_sids):032d}"


@dataclass
class SmsWorld:
    app: App
    channel: SmsChannel
    twilio: FakeTwilio
    server: TestServer
    http: aiohttp.ClientSession
    sent_before: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))

    async def text(self, body: str, *, sender: str = ALICE, sid: str | None = None,
                   media: list[str] | None = None, signature: str | None = None,
                   public_url: str | None = None) -> aiohttp.ClientResponse:
        """The person texts Valet: Twilio posts a signed webhook."""
        params = inbound_params(sender, body, sid=sid or new_sid(), to=FROM_NUMBER,
                                account_sid=ACCOUNT_SID, media=media)
        response = await post_signed(self.http, self.url("/sms/inbound"),
                                     (public_url or PUBLIC_URL) + "/sms/inbound", params,
                                     AUTH_TOKEN, signature=signature)
        await response.read()
        return response

    async def status(self, outbox_id: int, status: str, *, error: str | None = None,
                     to: str = ALICE, signature: str | None = None) -> aiohttp.ClientResponse:
        params = {"MessageSid": new_sid(), "MessageStatus": status, "To": to,
                  "From": FROM_NUMBER, "AccountSid": ACCOUNT_SID}
        if error:
            params["ErrorCode"] = error
        path = f"/sms/status?outbox={outbox_id}"
        response = await post_signed(self.http, self.url(path), PUBLIC_URL + path, params,
                                     AUTH_TOKEN, signature=signature)
        await response.read()
        return response

    async def send(self, message: Any) -> str | None:
        """What the outbox's deliverer does with a row: the meter first, then the sender (the
        sender sends nothing the meter did not let out)."""
        meter = self.app.outbound.deliverer.meter
        assert meter is not None
        verdict = await meter.admit(message, self.channel.sender)
        assert verdict.go, verdict.reason
        return await self.channel.sender.send(message)

    async def idle(self) -> None:
        await asyncio.wait_for(self.app.gateway.wait_idle(), 60)

    def replies(self, to: str = ALICE) -> list[str]:
        return self.twilio.bodies_to(to)

    async def inbox_rows(self) -> int:
        return int(await self.app.db.fetchval("SELECT COUNT(*) FROM inbox"))

    async def outbox_row(self, outbox_id: int) -> dict[str, Any]:
        row = await self.app.db.fetchrow(f"{OUTBOX_ROWS} WHERE o.id = $1", outbox_id)
        assert row is not None
        return row

    async def last_outbox(self) -> dict[str, Any]:
        row = await self.app.db.fetchrow(f"{OUTBOX_ROWS} ORDER BY o.id DESC LIMIT 1")
        assert row is not None
        return row


def sms_env(twilio: FakeTwilio) -> dict[str, str]:
    return {"VALET_TWILIO_ACCOUNT_SID": twilio.account_sid,
            "VALET_TWILIO_AUTH_TOKEN": twilio.auth_token,
            "VALET_TWILIO_API_URL": twilio.base_url}


async def sms_world(app_factory: Any, *, allow: tuple[str, ...] = (ALICE,),
                    policy: str = "allowlist", **overrides: Any) -> tuple[SmsWorld, Any]:
    """The world, and a closer to await at the end."""
    twilio = await FakeTwilio(ACCOUNT_SID, AUTH_TOKEN).__aenter__()
    settings_overrides = {
        "public_url": PUBLIC_URL, "sms": SmsSettings(from_number=FROM_NUMBER),
        "access": AccessSettings(channels={"sms": ChannelAccess(policy=policy,
                                                                allow=list(allow))}),
        **overrides}
    app = await app_factory(**settings_overrides)
    channel = served_channel(app, "sms", env=sms_env(twilio))
    await app.start()
    server = TestServer(channel.web_app())
    await server.start_server()
    http = aiohttp.ClientSession()
    world = SmsWorld(app, channel, twilio, server, http)

    async def close() -> None:
        await http.close()
        await server.close()
        await channel.stop()
        await channel.close()  # its Twilio client's session
        await twilio.__aexit__(None, None, None)

    return world, close
