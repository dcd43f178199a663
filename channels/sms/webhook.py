"""Twilio's webhooks: POST /sms/inbound (a message) and POST /sms/status (a delivery report).

Both are signed: X-Twilio-Signature is checked with twilio's RequestValidator against the
PUBLIC URL (VALET_PUBLIC_URL + path + query), because behind a proxy the URL this server sees
is not the one Twilio signed. A missing or wrong signature gets 403 and touches nothing; a
body over the limit gets 413 (before it is read when its length says so), one that does not
arrive in time 408 (bot.plumbing.request_body). Twilio is answered with an empty TwiML document as
soon as the message is durable; the reply goes later, through the outbox.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

from aiohttp import web
from multidict import MultiDict
from twilio.request_validator import RequestValidator

from bot.contracts.clock import Clock
from bot.people.identity import IdentityStore
from bot.plumbing.request_body import BodyError, BodyLimits, read_body, refused
from channels.sms.inbound import CHANNEL, SmsInbound
from channels.sms.store import SmsStore

log = logging.getLogger(__name__)

INBOUND_PATH = "/sms/inbound"
STATUS_PATH = "/sms/status"
EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>'
# Delivery errors that say something about the number itself.
OPTED_OUT_ERRORS = {"21610"}
UNREACHABLE_ERRORS = {"30005", "30006"}  # unknown handset, landline


def _twiml() -> web.Response:
    return web.Response(text=EMPTY_TWIML, content_type="text/xml")


class SmsWebhook:
    def __init__(self, *, auth_token: str, public_url: str, inbound: SmsInbound,
                 store: SmsStore, identities: IdentityStore,
                 clock: Clock, max_bytes: int = 64 * 1024,
                 body_timeout_seconds: float = 10.0) -> None:
        self._validator = RequestValidator(auth_token)
        self.public_url = public_url.rstrip("/")
        self.inbound = inbound
        self.store = store
        self.identities = identities
        self.clock = clock
        self.limits = BodyLimits(max_bytes=max_bytes, timeout_seconds=body_timeout_seconds)

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
        except BodyError as err:
            return refused(request, err)
        await self.inbound.handle({k: form[k] for k in form})  # durable before the answer
        return _twiml()

    async def handle_status(self, request: web.Request) -> web.Response:
        try:
            form = await self._verified_form(request)
        except BodyError as err:
            return refused(request, err)
        status = form.get("MessageStatus") or form.get("SmsStatus") or ""
        error = form.get("ErrorCode") or None
        try:
            outbox_id = int(request.query.get("outbox", ""))
        except ValueError:
            log.warning("sms status callback without an outbox id: %s", request.rel_url)
            return _twiml()
        at = self.clock.now()
        await self.store.record_delivery(outbox_id, status, error, at)
        to = form.get("To", "")
        if error in OPTED_OUT_ERRORS and to:
            await self.identities.set_opted_out(CHANNEL, to, True, at=at)
        elif error in UNREACHABLE_ERRORS and to:
            await self.identities.set_unreachable(CHANNEL, to, True, at=at)
        if status in ("undelivered", "failed"):
            log.warning("sms outbox %s to %s %s (error %s)", outbox_id, to, status, error)
        return _twiml()

