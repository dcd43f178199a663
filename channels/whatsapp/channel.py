"""The WhatsApp channel as `valet serve` runs it: the account from the environment and
settings, the webhooks and the sender on a `ChannelHost`; at start, the card content found or
created (channels.whatsapp.cards)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from bot.config import ConfigError, Settings
from bot.gateway.door import ChannelHost
from bot.meter.ledger import Ledger
from channels.twilio.rest import (
    ACCOUNT_ENV,
    API_URL_ENV,
    TOKEN_ENV,
    TwilioAccount,
    credentials_missing,
)
from channels.twilio.served import TwilioChannel
from channels.whatsapp.inbound import WhatsAppInbound
from channels.whatsapp.lines import WhatsAppLines
from channels.whatsapp.sender import WhatsAppSender
from channels.whatsapp.settings import SECTION
from channels.whatsapp.store import WhatsAppStore
from channels.whatsapp.webhook import STATUS_PATH, WhatsAppWebhook
from channels.whatsapp.wire import from_wire

log = logging.getLogger(__name__)


def whatsapp_account(settings: Settings, env: Mapping[str, str]) -> TwilioAccount:
    """The account from the environment and settings; a clear error naming what is missing."""
    missing = credentials_missing(env)
    if not settings.public_url:
        missing.append("VALET_PUBLIC_URL (or public_url in valet.yaml)")
    wa = SECTION.of(settings)
    if not (wa.from_number or wa.messaging_service_sid):
        missing.append("whatsapp.from_number or whatsapp.messaging_service_sid "
                       "(VALET_WHATSAPP_FROM_NUMBER)")
    if missing:
        raise ConfigError("WhatsApp is not configured: set " + ", ".join(missing) + " (see "
                          "docs/whatsapp.md)")
    assert settings.public_url is not None
    return TwilioAccount(
        account_sid=env[ACCOUNT_ENV], auth_token=env[TOKEN_ENV],
        from_number=from_wire(wa.from_number) if wa.from_number else None,
        messaging_service_sid=wa.messaging_service_sid, api_url=env.get(API_URL_ENV) or None,
        status_callback_url=settings.public_url.rstrip("/") + STATUS_PATH)


@dataclass
class WhatsAppChannel(TwilioChannel[WhatsAppSender]):
    """What `valet serve` runs for WhatsApp: the webhooks and the sender."""

    name: str = "whatsapp"

    async def prepare(self) -> None:
        """The card content of the persona's language, found or created now (a process that
        only sends needs it too); without it cards go in words until it can be made."""
        if self.sender.cards is not None:
            await self.sender.cards.sid()


def build_whatsapp_channel(host: ChannelHost, settings: Settings,
                           env: Mapping[str, str] | None = None) -> WhatsAppChannel:
    """The WhatsApp channel on the host's door and its own store. The caller registers its
    sender with the outbox."""
    env = os.environ if env is None else env
    account = whatsapp_account(settings, env)
    wa = SECTION.of(settings)
    store = WhatsAppStore(host.db)
    sender = WhatsAppSender(account, store=store, identities=host.identities, door=host.door,
                            clock=host.clock, lines=host.lines,
                            words=host.words(WhatsAppLines), templates=wa.templates,
                            buttons=wa.buttons, ledger=Ledger(host.db),
                            price_per_message=wa.price_per_message,
                            price_per_template=wa.price_per_template)
    llm = settings.llm
    inbound = WhatsAppInbound(host, store, vision=llm.vision,
                              hears_voice=bool(llm.transcription_model))
    assert settings.public_url is not None
    webhook = WhatsAppWebhook(auth_token=account.auth_token, public_url=settings.public_url,
                              inbound=inbound, store=store, identities=host.identities,
                              clock=host.clock, window_closed=sender.window_closed,
                              max_bytes=wa.max_request_bytes,
                              body_timeout_seconds=settings.http.body_timeout_seconds,
                              spool=host.spool)
    return WhatsAppChannel(sender, webhook)
