"""SMS's webhooks: POST /sms/inbound (a message) and POST /sms/status (a delivery report),
signed and read as every Twilio webhook is (channels.twilio.webhooks: 403 unsigned or forged,
413 too big, 408 too slow, 400 for parameters that are not what Twilio sends).
Twilio is answered with an empty TwiML document as soon as the message is durable; the reply
goes later, through the outbox. With the database unreachable the webhook is durable in the
spool instead (bot.plumbing.spool; Twilio never sends a webhook again) and moved into the inbox once
the database is back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.contracts.clock import Clock
from bot.people.identity import IdentityStore
from bot.plumbing.spool import Spool
from channels.sms.inbound import CHANNEL, SmsInbound
from channels.sms.store import SmsStore
from channels.twilio.webhooks import (
    EMPTY_TWIML,
    OPTED_OUT_ERRORS,
    UNREACHABLE_ERRORS,
    TwilioWebhooks,
)

log = logging.getLogger(__name__)

INBOUND_PATH = "/sms/inbound"
STATUS_PATH = "/sms/status"
__all__ = ["EMPTY_TWIML", "INBOUND_PATH", "STATUS_PATH", "SmsWebhook"]


class SmsWebhook(TwilioWebhooks):
    def __init__(self, *, auth_token: str, public_url: str, inbound: SmsInbound,
                 store: SmsStore, identities: IdentityStore,
                 clock: Clock, max_bytes: int = 64 * 1024,
                 body_timeout_seconds: float = 10.0, spool: Spool | None = None) -> None:
        self.inbound = inbound
        self.store = store
        self.identities = identities
        super().__init__(CHANNEL, auth_token=auth_token, public_url=public_url, clock=clock,
                         max_bytes=max_bytes, body_timeout_seconds=body_timeout_seconds,
                         spool=spool)

    async def take_message(self, fields: Mapping[str, str], at: datetime) -> None:
        await self.inbound.handle(fields, received_at=at)

    async def record_status(self, report: Mapping[str, Any], at: datetime) -> None:
        """A delivery report: the message's status, and what it says about the number."""
        row, status = int(report["outbox"]), str(report["status"])
        error, to = report.get("error"), str(report.get("to") or "")
        await self.store.record_delivery(row, status, error, at)
        if error in OPTED_OUT_ERRORS and to:
            await self.identities.set_opted_out(CHANNEL, to, True, at=at)
        elif error in UNREACHABLE_ERRORS and to:
            await self.identities.set_unreachable(CHANNEL, to, True, at=at)
        if status in ("undelivered", "failed"):
            log.warning("sms outbox %s to %s %s (error %s)", row, to, status, error)
