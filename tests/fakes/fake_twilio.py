"""A fake Twilio REST API (aiohttp.web) that the real `twilio` client talks to, and a signer for
test webhooks that uses twilio's own `RequestValidator` algorithm.

    async with FakeTwilio(account_sid, auth_token) as fake:
        fake.fail_next(503)                       # the next create answers 503
        fake.pass_next(); fake.fail_next(503)     # the second one does
        fake.fail_next(429, retry_after=7)        # ... or 429 with Retry-After
        fake.fail_to("+447700900123", 21610)      # every message to this number: opted out
        fake.fail_call("numbers", 502)            # the next number lookup: a gateway error
        client = Client(sid, token, http_client=...)  # base URL: fake.base_url
        ...
        fake.sent  # what was accepted, in order

The account lookups `valet onboard` and `valet doctor` make are there too: the account itself
(a wrong SID or token gets 401, error 20003), the account's numbers (`fake.numbers`, by
default Valet's test number, able to send SMS) and its Messaging Services (`fake.services`).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from multidict import MultiDict
from twilio.request_validator import RequestValidator

from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.fakes.sms_segments import segments

# Twilio's HTTP status for each error code the tests use.
ERROR_STATUS = {21610: 400, 21211: 400, 21614: 400, 20003: 401, 20404: 404, 20429: 429,
                20500: 500}
DEFAULT_NUMBER = "+15005550006"
# The kinds of request `fail_call` can make fail: the account, the list of its numbers, a
# number's update (its SMS webhook), a Messaging Service, sending a message.
CALLS = ("account", "numbers", "update_number", "service", "messages")


@dataclass
class Failure:
    status: int
    code: int | None = None
    retry_after: float | None = None
    message: str = "injected failure"


@dataclass(frozen=True)
class SentMessage:
    sid: str
    to: str
    body: str
    from_: str | None
    messaging_service_sid: str | None
    status_callback: str | None
    segments: int = 1  # as Twilio bills it (tests.fakes.sms_segments)
    encoding: str = "GSM-7"
    content_sid: str | None = None  # a content template (WhatsApp), its variables filled in
    content_variables: str | None = None


class FakeTwilio:
    def __init__(self, account_sid: str = "AC" + "0" * 32, auth_token: str = "test-token"
                 ) -> None:
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.sent: list[SentMessage] = []
        self.requests = 0
        self.refused_auth = 0
        self._failures: deque[Failure | None] = deque()  # None: this one succeeds
        self._by_number: dict[str, Failure] = {}
        self._call_failures: dict[str, deque[Failure]] = {}  # by CALLS name
        self._sids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base_url = ""
        self.arrived = asyncio.Condition()
        # Numbers whose messages are held open, never answered (a send in flight when its
        # sender is killed); `held` counts the requests caught so.
        self.holding: set[str] = set()
        self.held = 0
        # The account's numbers: E.164 -> what it can do and where its SMS webhook points.
        self.numbers: dict[str, dict[str, Any]] = {
            DEFAULT_NUMBER: {"sms": True, "sms_url": ""}}
        self.services: dict[str, str] = {}  # Messaging Service SID -> friendly name
        # WhatsApp's side: the window, the Content API, media (tests.fakes.fake_whatsapp).
        self.whatsapp = FakeWhatsApp(account_sid, auth_token)

    # --- what the test controls -------------------------------------------------------------

    def fail_next(self, status: int, code: int | None = None, *, retry_after: float | None = None,
                  times: int = 1) -> None:
        for _ in range(times):
            self._failures.append(Failure(status, code, retry_after))

    def fail_call(self, call: str, status: int, code: int | None = None,
                  times: int = 1) -> None:
        """The next `times` requests of one kind (CALLS) fail this way; a 5xx without an
        error code answers as Twilio's edge does, with an HTML page instead of JSON."""
        assert call in CALLS, call
        self._call_failures.setdefault(call, deque()).extend(
            Failure(status, code) for _ in range(times))

    def _call_failure(self, call: str) -> web.Response | None:
        waiting = self._call_failures.get(call)
        if not waiting:
            return None
        failure = waiting.popleft()
        if failure.code is None and failure.status >= 500:
            return web.Response(status=failure.status, content_type="text/html",
                                text=f"<html><body><h1>{failure.status} Bad Gateway</h1>"
                                     "</body></html>")
        return _error(failure)

    def pass_next(self, times: int = 1) -> None:
        """The next requests succeed (before failures queued after this)."""
        self._failures.extend([None] * times)

    def fail_to(self, number: str, code: int) -> None:
        self._by_number[number] = Failure(ERROR_STATUS.get(code, 400), code)

    def bodies_to(self, number: str) -> list[str]:
        return [m.body for m in self.sent if m.to == number]

    def segments_to(self, number: str | None = None) -> int:
        """Segments billed for what was accepted (to one number, or to all)."""
        return sum(m.segments for m in self.sent if number is None or m.to == number)

    async def wait_for(self, count: int, timeout: float = 5.0) -> list[SentMessage]:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: len(self.sent) >= count),
                                   timeout)
        return self.sent

    # --- the server ---------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/2010-04-01/Accounts/{sid}/Messages.json", self._create),
                web.get("/2010-04-01/Accounts/{sid}.json", self._account),
                web.get("/2010-04-01/Accounts/{sid}/IncomingPhoneNumbers.json", self._numbers),
                web.post("/2010-04-01/Accounts/{sid}/IncomingPhoneNumbers/{pn}.json",
                         self._update_number),
                web.get("/messaging/v1/Services/{service}", self._service),
                *self.whatsapp.routes()]

    async def __aenter__(self) -> FakeTwilio:
        app = web.Application()
        app.router.add_routes(self.routes())
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.whatsapp.close()
        if self._runner:
            await self._runner.cleanup()

    def _authorised(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        expected = base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
        return header[6:] == expected and request.match_info["sid"] == self.account_sid

    async def _account(self, request: web.Request) -> web.Response:
        self.requests += 1
        if (injected := self._call_failure("account")) is not None:
            return injected
        if not self._authorised(request):
            self.refused_auth += 1
            return _error(Failure(401, 20003, message="Authenticate"))
        return web.json_response({"sid": self.account_sid, "friendly_name": "Test account",
                                  "status": "active", "type": "Full"})

    async def _numbers(self, request: web.Request) -> web.Response:
        self.requests += 1
        if (injected := self._call_failure("numbers")) is not None:
            return injected
        if not self._authorised(request):
            self.refused_auth += 1
            return _error(Failure(401, 20003, message="Authenticate"))
        wanted = request.query.get("PhoneNumber")
        found = [self._number(i, number) for i, number in enumerate(self.numbers)
                 if wanted is None or number == wanted]
        return web.json_response({
            "incoming_phone_numbers": found, "page": 0, "page_size": 50, "start": 0,
            "end": max(len(found) - 1, 0), "first_page_uri": request.path_qs,
            "next_page_uri": None, "previous_page_uri": None, "uri": request.path_qs})

    def _number(self, i: int, number: str) -> dict[str, Any]:
        spec = self.numbers[number]
        return {"sid": f"PN{i:032x}", "account_sid": self.account_sid, "phone_number": number,
                "friendly_name": number, "sms_url": spec.get("sms_url", ""),
                "sms_method": spec.get("sms_method", "POST"),
                "capabilities": {"voice": True, "sms": bool(spec.get("sms")), "mms": False}}

    async def _update_number(self, request: web.Request) -> web.Response:
        self.requests += 1
        if (injected := self._call_failure("update_number")) is not None:
            return injected
        if not self._authorised(request):
            self.refused_auth += 1
            return _error(Failure(401, 20003, message="Authenticate"))
        numbers = list(self.numbers)
        index = int(request.match_info["pn"][2:], 16)
        if index >= len(numbers):
            return _error(Failure(404, 20404, message="The requested resource was not found"))
        form = await request.post()
        spec = self.numbers[numbers[index]]
        if "SmsUrl" in form:
            spec["sms_url"] = str(form["SmsUrl"])
        if "SmsMethod" in form:
            spec["sms_method"] = str(form["SmsMethod"])
        return web.json_response(self._number(index, numbers[index]))

    async def _service(self, request: web.Request) -> web.Response:
        self.requests += 1
        if (injected := self._call_failure("service")) is not None:
            return injected
        header = request.headers.get("Authorization", "")
        expected = base64.b64encode(f"{self.account_sid}:{self.auth_token}".encode()).decode()
        if header != f"Basic {expected}":
            self.refused_auth += 1
            return _error(Failure(401, 20003, message="Authenticate"))
        sid = request.match_info["service"]
        if sid not in self.services:
            return _error(Failure(404, 20404, message="The requested resource was not found"))
        return web.json_response({"sid": sid, "account_sid": self.account_sid,
                                  "friendly_name": self.services[sid]})

    async def _create(self, request: web.Request) -> web.Response:
        self.requests += 1
        if (injected := self._call_failure("messages")) is not None:
            return injected
        if not self._authorised(request):
            self.refused_auth += 1
            return _error(Failure(401, 20003, message="Authenticate"))
        form = await request.post()
        to = str(form.get("To", ""))
        if to in self.holding:  # in flight until the sender gives up or dies
            self.held += 1
            await asyncio.Event().wait()
        failure = self._failures.popleft() if self._failures else None
        failure = failure or self._by_number.get(to)
        if failure is not None:
            return _error(failure)
        body, refused = self.whatsapp.body_of(form)
        refused = refused or self.whatsapp.refused_now(form)
        if refused is not None:
            return _error(Failure(refused["status"], refused["code"],
                                  message=refused["message"]))
        if not body or not (form.get("From") or form.get("MessagingServiceSid")):
            return _error(Failure(400, 21602, message="Message body is required."))
        if len(body) > 1600:
            return _error(Failure(400, 21617, message="The concatenated message body "
                                                      "exceeds the 1600 character limit."))
        sid = f"SM{next(self._sids):032x}"
        billed = segments(body)
        message = SentMessage(sid, to, body, _opt(form.get("From")),
                              _opt(form.get("MessagingServiceSid")),
                              _opt(form.get("StatusCallback")), billed.count, billed.encoding,
                              _opt(form.get("ContentSid")), _opt(form.get("ContentVariables")))
        if self.whatsapp.refused_later(form):
            self.whatsapp.report_later(form, sid)
        async with self.arrived:
            self.sent.append(message)
            self.arrived.notify_all()
        now = datetime.now(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
        return web.json_response(status=201, data={
            "sid": sid, "account_sid": self.account_sid, "to": to, "from": message.from_,
            "messaging_service_sid": message.messaging_service_sid, "body": message.body,
            "status": "queued", "num_segments": str(billed.count), "num_media": "0", "direction":
            "outbound-api", "api_version": "2010-04-01", "price": None, "price_unit": "USD",
            "error_code": None, "error_message": None, "date_created": now,
            "date_updated": now, "date_sent": None,
            "uri": f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}.json",
            "subresource_uris": {}})


def _opt(value: Any) -> str | None:
    return str(value) if value else None


def _error(failure: Failure) -> web.Response:
    headers = {"Retry-After": f"{failure.retry_after:g}"} if failure.retry_after else None
    code = failure.code or failure.status
    return web.json_response(status=failure.status, headers=headers, data={
        "code": code, "message": failure.message, "status": failure.status,
        "more_info": f"https://www.twilio.com/docs/errors/{code}"})


# --- signing webhooks the way Twilio does ------------------------------------------------------


def sign(auth_token: str, public_url: str, params: dict[str, str]) -> str:
    """X-Twilio-Signature for a POST of `params` to `public_url`."""
    return RequestValidator(auth_token).compute_signature(public_url, MultiDict(params))


async def post_signed(session: aiohttp.ClientSession, local_url: str, public_url: str,
                      params: dict[str, str], auth_token: str, *,
                      signature: str | None = None) -> aiohttp.ClientResponse:
    """POST a form as Twilio would: signed for the public URL, sent to the local one. With
    `signature=""` the header is left out."""
    signature = sign(auth_token, public_url, params) if signature is None else signature
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if signature:
        headers["X-Twilio-Signature"] = signature
    return await session.post(local_url, data=urlencode(params), headers=headers)


def inbound_params(from_: str, body: str, *, sid: str, to: str = "+15005550006",
                   account_sid: str = "AC" + "0" * 32, media: list[str] | None = None
                   ) -> dict[str, str]:
    """The form Twilio posts for an incoming SMS (or MMS, with media URLs)."""
    params = {"MessageSid": sid, "SmsSid": sid, "SmsMessageSid": sid, "AccountSid": account_sid,
              "From": from_, "To": to, "Body": body, "NumSegments": "1",
              "NumMedia": str(len(media or [])), "FromCountry": "US", "ApiVersion": "2010-04-01"}
    for i, url in enumerate(media or []):
        params[f"MediaUrl{i}"] = url
        params[f"MediaContentType{i}"] = "image/jpeg"
    return params


async def _serve_forever(port: int, account_sid: str, auth_token: str) -> None:
    fake = FakeTwilio(account_sid, auth_token)
    app = web.Application()
    app.router.add_routes(fake.routes())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)  # type: ignore[union-attr]
    await asyncio.Event().wait()


if __name__ == "__main__":  # a server of its own (benchmarks): prints its port
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--account-sid", required=True)
    parser.add_argument("--auth-token", required=True)
    args = parser.parse_args()
    asyncio.run(_serve_forever(args.port, args.account_sid, args.auth_token))
