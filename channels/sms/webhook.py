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

from aiohttp import web

from bot.contracts.clock import Clock
from bot.people.identity import IdentityStore
from bot.plumbing.request_body import BodyError, BodyLimits, refused
from bot.plumbing.spool import Spool, store_or_keep
from channels.sms.inbound import CHANNEL, SmsInbound
from channels.sms.store import SmsStore
from channels.twilio.webhooks import (
    EMPTY_TWIML,
    OPTED_OUT_ERRORS,
    UNREACHABLE_ERRORS,
    SignedForms,
    message_sid_problem,
    outbox_id,
    status_report,
    twiml,
)

log = logging.getLogger(__name__)

INBOUND_PATH = "/sms/inbound"
STATUS_PATH = "/sms/status"
__all__ = ["EMPTY_TWIML", "INBOUND_PATH", "STATUS_PATH", "SmsWebhook"]
INBOUND_KIND, STATUS_KIND = "sms.inbound", "sms.status"


class SmsWebhook:
    def __init__(self, *, auth_token: str, public_url: str, inbound: SmsInbound,
                 store: SmsStore, identities: IdentityStore,
                 clock: Clock, max_bytes: int = 64 * 1024,
                 body_timeout_seconds: float = 10.0, spool: Spool | None = None) -> None:
        self.public_url = public_url.rstrip("/")
        self.inbound = inbound
        self.store = store
        self.identities = identities
        self.clock = clock
        self.limits = BodyLimits(max_bytes=max_bytes, timeout_seconds=body_timeout_seconds)
        self.forms = SignedForms(auth_token=auth_token, public_url=public_url,
                                 limits=self.limits, label="sms")
        self.spool = spool
        if spool is not None:
            spool.replays(INBOUND_KIND, self._replay_inbound)
            spool.replays(STATUS_KIND, self._replay_status)

    def routes(self) -> list[web.RouteDef]:
        return [web.post(INBOUND_PATH, self.handle_inbound),
                web.post(STATUS_PATH, self.handle_status)]

    async def handle_inbound(self, request: web.Request) -> web.Response:
        try:
            form = await self.forms.verified(request)
            fields = {k: form[k] for k in form}
            problem = message_sid_problem(fields)
            if problem:
                raise BodyError(400, problem)
        except BodyError as err:
            return refused(request, err)
        at = self.clock.now()
        # Durable before the answer: in the inbox, or in the spool while the database is away.
        await store_or_keep(self.spool, INBOUND_KIND, fields, at,
                            lambda: self.inbound.handle(fields, received_at=at))
        return twiml()

    async def _replay_inbound(self, fields: Mapping[str, Any], at: datetime) -> None:
        await self.inbound.handle({k: str(v) for k, v in fields.items()}, received_at=at)

    async def handle_status(self, request: web.Request) -> web.Response:
        try:
            form = await self.forms.verified(request)
            outbox = outbox_id(request.query.get("outbox"))
        except BodyError as err:
            return refused(request, err)
        report = status_report(form, outbox)
        at = self.clock.now()
        await store_or_keep(self.spool, STATUS_KIND, report, at,
                            lambda: self.record_status(report, at))
        return twiml()

    async def _replay_status(self, report: Mapping[str, Any], at: datetime) -> None:
        await self.record_status(report, at)

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

