"""The SMS channel as `valet serve` runs it: the account from the environment and settings,
the webhooks and the sender on a `ChannelHost` (see the package's docstring)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from bot.config import ConfigError, Settings
from bot.gateway.door import ChannelHost
from bot.meter.ledger import Ledger
from bot.text.phones import in_countries
from channels.sms.adapter import SmsSender
from channels.sms.inbound import SmsInbound
from channels.sms.store import SmsStore
from channels.sms.webhook import STATUS_PATH, SmsWebhook
from channels.twilio.rest import TwilioAccount, credentials_missing
from channels.twilio.served import TwilioChannel

log = logging.getLogger(__name__)


def twilio_account(settings: Settings, env: Mapping[str, str]) -> TwilioAccount:
    """The account from the environment and settings; a clear error naming what is missing."""
    missing = credentials_missing(env)
    if not settings.public_url:
        missing.append("VALET_PUBLIC_URL (or public_url in valet.yaml)")
    if not (settings.sms.from_number or settings.sms.messaging_service_sid):
        missing.append("sms.from_number or sms.messaging_service_sid "
                       "(VALET_SMS_FROM_NUMBER / VALET_SMS_MESSAGING_SERVICE_SID)")
    if missing:
        raise ConfigError("SMS is not configured: set " + ", ".join(missing) + " (see "
                          "docs/channels.md, SMS)")
    assert settings.public_url is not None
    return TwilioAccount(
        account_sid=env["VALET_TWILIO_ACCOUNT_SID"], auth_token=env["VALET_TWILIO_AUTH_TOKEN"],
        from_number=settings.sms.from_number,
        messaging_service_sid=settings.sms.messaging_service_sid,
        api_url=env.get("VALET_TWILIO_API_URL") or None,
        status_callback_url=settings.public_url.rstrip("/") + STATUS_PATH)


@dataclass
class SmsChannel(TwilioChannel[SmsSender]):
    """What `valet serve` runs for SMS: the webhooks and the sender."""

    name: str = "sms"


def build_sms_channel(host: ChannelHost, settings: Settings, env: Mapping[str, str] | None = None,
                      *, emoji: bool = False) -> SmsChannel:
    """The SMS channel on the host's door and its own store, saying the host's lines. The
    caller registers its sender with the outbox (App.add_channel). `emoji`: the persona lets
    emoji through on SMS."""
    env = os.environ if env is None else env
    account = twilio_account(settings, env)
    if not settings.sms_countries():
        log.warning("SMS may go to no country: every SMS is refused until sms.allowed_countries "
                    "(or the owner's phone numbers) names one (valet doctor)")
    store = SmsStore(host.db)
    sender = SmsSender(account, store=store, identities=host.identities, clock=host.clock,
                       emoji=emoji, lines=host.lines,
                       summary_max_segments=settings.sms.summary_max_segments,
                       max_segments=settings.sms.max_segments,
                       may_send=in_countries(settings.sms_countries()),
                       ledger=Ledger(host.db), price=settings.sms_segment_price,
                       plain_letters=settings.sms.plain_letters)
    inbound = SmsInbound(host, store, default_region=settings.sms.default_region)
    assert settings.public_url is not None
    webhook = SmsWebhook(auth_token=account.auth_token, public_url=settings.public_url,
                         inbound=inbound, store=store, identities=host.identities,
                         clock=host.clock, max_bytes=settings.sms.max_request_bytes,
                         body_timeout_seconds=settings.http.body_timeout_seconds,
                         spool=host.spool)
    return SmsChannel(sender, webhook)
