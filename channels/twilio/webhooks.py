"""Twilio's webhooks, as every channel on Twilio reads them: the signature, the form, the
delivery report, and a channel's two webhooks (`TwilioWebhooks`).

Each is signed: X-Twilio-Signature is checked with twilio's RequestValidator against the
PUBLIC URL (VALET_PUBLIC_URL + path + query), because behind a proxy the URL this server sees
is not the one Twilio signed. A missing or wrong signature gets 403 and touches nothing; a
body over the limit gets 413 (before it is read when its length says so), one that does not
arrive in time 408 (bot.plumbing.request_body). Parameters Valet reads that are not what Twilio
sends (a MessageSid that is no SID, an outbox id that is no row id) are 400, said in one line.
Twilio is answered with an empty TwiML document as soon as what it said is durable.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from multidict import MultiDict
from twilio.request_validator import RequestValidator

from bot.contracts.clock import Clock
from bot.plumbing.request_body import BodyError, BodyLimits, read_body, refused
from bot.plumbing.spool import Spool, store_or_keep

log = logging.getLogger(__name__)

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
# Delivery errors that say something about the address itself.
OPTED_OUT_ERRORS = {"21610"}
UNREACHABLE_ERRORS = {"30005", "30006", "63003", "63024"}  # unknown handset, landline, no
#                                                              WhatsApp, invalid recipient
_SID = re.compile(r"[A-Za-z0-9]{2,64}")  # Twilio's are 34: two letters and 32 hex digits
MAX_ROW_ID = 2**63 - 1  # a BIGINT


def twiml() -> web.Response:
    return web.Response(text=EMPTY_TWIML, content_type="text/xml")


class SignedForms:
    """Reads a webhook's form once its signature is checked (`label` names the channel in
    the log line of a refusal)."""

    def __init__(self, *, auth_token: str, public_url: str, limits: BodyLimits,
                 label: str) -> None:
        self._validator = RequestValidator(auth_token)
        self.public_url = public_url.rstrip("/")
        self.limits = limits
        self.label = label

    async def verified(self, request: web.Request) -> MultiDict[str]:
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
            log.warning("%s webhook %s refused: %s signature", self.label, request.path,
                        "missing" if not signature else "wrong")
            raise web.HTTPForbidden(text="invalid signature")
        return form


def message_sid_problem(fields: Mapping[str, str]) -> str | None:
    """What in a signed message's parameters is not what Twilio sends, or None."""
    sid = fields.get("MessageSid") or fields.get("SmsSid") or ""
    if not _SID.fullmatch(sid):
        return "MessageSid is missing or is not a Twilio SID"
    return None


def outbox_id(value: str | None) -> int:
    """The outbox row a status callback is about (Valet put it in the callback's URL)."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > 19 \
            or not 1 <= int(value) <= MAX_ROW_ID:
        raise BodyError(400, "outbox must be the id of an outbox row")
    return int(value)


def status_report(form: Mapping[str, str], outbox: int) -> dict[str, Any]:
    """A delivery report as Valet keeps it (and spools it while the database is away)."""
    return {"outbox": outbox, "status": form.get("MessageStatus") or form.get("SmsStatus")
            or "", "error": form.get("ErrorCode") or None, "to": form.get("To", ""),
            "sid": form.get("MessageSid") or ""}


class TwilioWebhooks(ABC):
    """One channel's two webhooks on Twilio: POST /<name>/inbound (a message) and POST
    /<name>/status (a delivery report). Each is answered once what it said is durable: in
    the channel's store, or in the spool while the database is away (bot.plumbing.spool;
    Twilio never sends a webhook again), moved on once the database is back. The channel says
    what a message and a report do."""

    def __init__(self, name: str, *, auth_token: str, public_url: str, clock: Clock,
                 max_bytes: int = 64 * 1024, body_timeout_seconds: float = 10.0,
                 spool: Spool | None = None) -> None:
        self.inbound_path, self.status_path = f"/{name}/inbound", f"/{name}/status"
        self.inbound_kind, self.status_kind = f"{name}.inbound", f"{name}.status"
        self.public_url = public_url.rstrip("/")
        self.clock = clock
        self.limits = BodyLimits(max_bytes=max_bytes, timeout_seconds=body_timeout_seconds)
        self.forms = SignedForms(auth_token=auth_token, public_url=public_url,
                                 limits=self.limits, label=name)
        self.spool = spool
        if spool is not None:
            spool.replays(self.inbound_kind, self._replay_inbound)
            spool.replays(self.status_kind, self.record_status)

    @abstractmethod
    async def take_message(self, fields: Mapping[str, str], at: datetime) -> None:
        """An incoming message, made durable (the channel's inbound side)."""

    @abstractmethod
    async def record_status(self, report: Mapping[str, Any], at: datetime) -> None:
        """A delivery report (`status_report`), kept and acted on."""

    def routes(self) -> list[web.RouteDef]:
        return [web.post(self.inbound_path, self.handle_inbound),
                web.post(self.status_path, self.handle_status)]

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
        await store_or_keep(self.spool, self.inbound_kind, fields, at,
                            lambda: self.take_message(fields, at))
        return twiml()

    async def _replay_inbound(self, fields: Mapping[str, Any], at: datetime) -> None:
        await self.take_message({k: str(v) for k, v in fields.items()}, at)

    async def handle_status(self, request: web.Request) -> web.Response:
        try:
            form = await self.forms.verified(request)
            report = status_report(form, outbox_id(request.query.get("outbox")))
        except BodyError as err:
            return refused(request, err)
        at = self.clock.now()
        await store_or_keep(self.spool, self.status_kind, report, at,
                            lambda: self.record_status(report, at))
        return twiml()
