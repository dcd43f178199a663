"""WhatsApp's webhooks: POST /whatsapp/inbound (a message) and POST /whatsapp/status (a
delivery report), signed and read as every Twilio webhook is (channels.twilio.webhooks: 403
unsigned or forged, 413 too big, 408 too slow, 400 for parameters that are not what Twilio
sends), answered once what it said is durable.

A report of error 63016 (outside the 24-hour window) sends the row again, by template or on
the person's other channel (WhatsAppSender.window_closed): never a silent loss.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from bot.contracts.clock import Clock
from bot.people.identity import IdentityStore
from bot.plumbing.spool import Spool
from channels.twilio.webhooks import OPTED_OUT_ERRORS, UNREACHABLE_ERRORS, TwilioWebhooks
from channels.whatsapp.inbound import WhatsAppInbound
from channels.whatsapp.store import WhatsAppStore
from channels.whatsapp.traits import NAME
from channels.whatsapp.wire import from_wire

log = logging.getLogger(__name__)

INBOUND_PATH = "/whatsapp/inbound"
STATUS_PATH = "/whatsapp/status"
WINDOW_CLOSED_ERROR = "63016"
# The row and the refused message's SID: the row goes again.
WindowClosed = Callable[[int, str], Awaitable[None]]


class WhatsAppWebhook(TwilioWebhooks):
    def __init__(self, *, auth_token: str, public_url: str, inbound: WhatsAppInbound,
                 store: WhatsAppStore, identities: IdentityStore, clock: Clock,
                 window_closed: WindowClosed, max_bytes: int = 64 * 1024,
                 body_timeout_seconds: float = 10.0, spool: Spool | None = None) -> None:
        self.inbound = inbound
        self.store = store
        self.identities = identities
        self.window_closed = window_closed
        super().__init__(NAME, auth_token=auth_token, public_url=public_url, clock=clock,
                         max_bytes=max_bytes, body_timeout_seconds=body_timeout_seconds,
                         spool=spool)

    async def take_message(self, fields: Mapping[str, str], at: datetime) -> None:
        await self.inbound.handle(fields, received_at=at)

    async def record_status(self, report: Mapping[str, Any], at: datetime) -> None:
        """A delivery report: the message's status, what it says about the address, and a
        closed window's row sent again."""
        row, status = int(report["outbox"]), str(report["status"])
        error, sid = report.get("error"), str(report.get("sid") or "")
        to = from_wire(str(report.get("to") or ""))
        await self.store.record_delivery(row, sid, status, error, at)
        if error == WINDOW_CLOSED_ERROR:
            await self.window_closed(row, sid)
        elif error in OPTED_OUT_ERRORS and to:
            await self.identities.set_opted_out(NAME, to, True, at=at)
        elif error in UNREACHABLE_ERRORS and to:
            await self.identities.set_unreachable(NAME, to, True, at=at)
        if status in ("undelivered", "failed"):
            log.warning("whatsapp outbox %s to %s %s (error %s)", row, to, status, error)
