"""Twilio's webhooks: POST /sms/inbound (a message) and POST /sms/status (a delivery report).

Both are signed: X-Twilio-Signature is checked with twilio's RequestValidator against the
PUBLIC URL (VALET_PUBLIC_URL + path + query), because behind a proxy the URL this server sees
is not the one Twilio signed. A missing or wrong signature gets 403 and touches nothing; a
body over the limit gets 413 (before it is read when its length says so), one that does not
arrive in time 408 (bot.plumbing.request_body). Parameters Valet reads that are not what Twilio
sends (a MessageSid that is no SID, an outbox id that is no row id) are 400, said in one line.
Twilio is answered with an empty TwiML document as soon as the message is durable; the reply
goes later, through the outbox. With the database unreachable the webhook is durable in the
spool instead (bot.plumbing.spool; Twilio never sends a webhook again) and moved into the inbox once
the database is back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from multidict import MultiDict
from twilio.request_validator import RequestValidator

from bot.contracts.clock import Clock
from bot.people.identity import IdentityStore
from bot.plumbing.request_body import BodyError, BodyLimits, read_body, refused
from bot.plumbing.spool import Spool, store_or_keep
from channels.sms.inbound import CHANNEL, SmsInbound
from channels.sms.store import SmsStore

log = logging.getLogger(__name__)

INBOUND_PATH = "/sms/inbound"
STATUS_PATH = "/sms/status"
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
# Delivery errors that say something about the number itself.
OPTED_OUT_ERRORS = {"21610"}
UNREACHABLE_ERRORS = {"30005", "30006"}  # unknown handset, landline
INBOUND_KIND, STATUS_KIND = "sms.inbound", "sms.status"
_SID = re.compile(r"[A-Za-z0-9]{2,64}")  # Twilio's are 34: two letters and 32 hex digits
MAX_ROW_ID = 2**63 - 1  # a BIGINT


def _twiml() -> web.Response:
    return web.Response(text=EMPTY_TWIML, content_type="text/xml")


class SmsWebhook:
    def __init__(self, *, auth_token: str, public_url: str, inbound: SmsInbound,
                 store: SmsStore, identities: IdentityStore,
                 clock: Clock, max_bytes: int = 64 * 1024,
                 body_timeout_seconds: float = 10.0, spool: Spool | None = None) -> None:
        self._validator = RequestValidator(auth_token)
        self.public_url = public_url.rstrip("/")
        self.inbound = inbound
        self.store = store
        self.identities = identities
        self.clock = clock
        self.limits = BodyLimits(max_bytes=max_bytes, timeout_seconds=body_timeout_seconds)
        self.spool = spool
        if spool is not None:
            spool.replays(INBOUND_KIND, self._replay_inbound)
            spool.replays(STATUS_KIND, self._replay_status)

    def routes(self) -> list[web.RouteDef]:
        return [web.post(INBOUND_PATH, self.handle_inbound),
                web.post(STATUS_PATH, self.handle_status)]

    async def _verified_form(self, request: web.Request) -> MultiDict[str]:
        """The signed form, or an error raised: 403 unsigned or forged (an HTTP error), a
        BodyError (413 too big, 408 too slow)."""
        raw = await read_body(request, self.limits)
        signature = request.headers.get("X-Twilio-Signature", "")
        try:
            form = MultiDict(parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                                       strict_parsing=False))
        except UnicodeDecodeError:
            form = MultiDict()
            signature = ""
        url = self.public_url + request.rel_url.path_qs
        if not signature or not self._validator.validate(url, form, signature):
            log.warning("sms webhook %s refused: %s signature", request.path,
                        "missing" if not signature else "wrong")
            raise web.HTTPForbidden(text="invalid signature")
        return form

    async def handle_inbound(self, request: web.Request) -> web.Response:
        try:
            form = await self._verified_form(request)
            fields = {k: form[k] for k in form}
            problem = _inbound_problem(fields)
            if problem:
                raise BodyError(400, problem)
        except BodyError as err:
            return refused(request, err)
        at = self.clock.now()
        # Durable before the answer: in the inbox, or in the spool while the database is away.
        await store_or_keep(self.spool, INBOUND_KIND, fields, at,
                            lambda: self.inbound.handle(fields, received_at=at))
        return _twiml()

    async def _replay_inbound(self, fields: Mapping[str, Any], at: datetime) -> None:
        await self.inbound.handle({k: str(v) for k, v in fields.items()}, received_at=at)

    async def handle_status(self, request: web.Request) -> web.Response:
        try:
            form = await self._verified_form(request)
            outbox_id = _outbox_id(request.query.get("outbox"))
        except BodyError as err:
            return refused(request, err)
        report = {"outbox": outbox_id, "status": form.get("MessageStatus") or
                  form.get("SmsStatus") or "", "error": form.get("ErrorCode") or None,
                  "to": form.get("To", "")}
        at = self.clock.now()
        await store_or_keep(self.spool, STATUS_KIND, report, at,
                            lambda: self.record_status(report, at))
        return _twiml()

    async def _replay_status(self, report: Mapping[str, Any], at: datetime) -> None:
        await self.record_status(report, at)

    async def record_status(self, report: Mapping[str, Any], at: datetime) -> None:
        """A delivery report: the message's status, and what it says about the number."""
        outbox_id, status = int(report["outbox"]), str(report["status"])
        error, to = report.get("error"), str(report.get("to") or "")
        await self.store.record_delivery(outbox_id, status, error, at)
        if error in OPTED_OUT_ERRORS and to:
            await self.identities.set_opted_out(CHANNEL, to, True, at=at)
        elif error in UNREACHABLE_ERRORS and to:
            await self.identities.set_unreachable(CHANNEL, to, True, at=at)
        if status in ("undelivered", "failed"):
            log.warning("sms outbox %s to %s %s (error %s)", outbox_id, to, status, error)


def _inbound_problem(fields: Mapping[str, str]) -> str | None:
    """What in a signed message's parameters is not what Twilio sends, or None."""
    sid = fields.get("MessageSid") or fields.get("SmsSid") or ""
    if not _SID.fullmatch(sid):
        return "MessageSid is missing or is not a Twilio SID"
    return None


def _outbox_id(value: str | None) -> int:
    """The outbox row a status callback is about (Valet put it in the callback's URL)."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > 19 \
            or not 1 <= int(value) <= MAX_ROW_ID:
        raise BodyError(400, "outbox must be the id of an outbox row")
    return int(value)
