"""WhatsApp on the fake Twilio (tests.fakes.fake_twilio), answering as the real service does:

- the same Messages API, with `whatsapp:+E164` addresses; a message may be a Body or a
  content template (ContentSid + ContentVariables, its variables filled in);
- the 24-hour window: Twilio accepts a free-form message (201, queued) to a person whose
  window is closed and then reports it failed with error 63016 in the status callback (signed,
  posted to the StatusCallback the message gave); a template goes only when WhatsApp
  approved it (`approve`), else the same 63016;
- the Content API (content.twilio.com/v1/Content): create (JSON), list, fetch, and a
  template's WhatsApp approval (ApprovalRequests);
- media a person sent, at its Twilio address: basic auth, then a redirect to the file.

    fake.whatsapp.close_window("+12125550123")  # the person last wrote over 24 h ago
    fake.whatsapp.deliver_reports(local_base, public_base)  # where status callbacks go
    url = fake.whatsapp.add_media(b"...", "audio/ogg")
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp import web

PREFIX = "whatsapp:"
WINDOW_CLOSED = 63016
PUBLIC_API = "https://api.twilio.com"
_VARIABLE = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Report:
    url: str
    params: dict[str, str]
    status: int


class FakeWhatsApp:
    def __init__(self, account_sid: str, auth_token: str) -> None:
        self.account_sid = account_sid
        self.auth_token = auth_token
        self.closed: set[str] = set()  # wire addresses whose 24-hour window is closed
        self.contents: dict[str, dict[str, Any]] = {}  # HX... -> the content as created
        self.approved: set[str] = set()  # content SIDs WhatsApp approved as templates
        self.media: dict[str, tuple[bytes, str]] = {}  # ME... -> bytes, type
        self.reports: list[Report] = []  # status callbacks posted (and Valet's answer)
        self.undelivered: set[str] = set()  # SIDs accepted, then failed (63016)
        self.content_down = False  # the Content API answers 503, as its edge does when down
        # 63016 in the API's answer (400) rather than later in the status callback: Twilio
        # documents both ("in the status callback / API error").
        self.refuse_at_once = False
        self.base_url = ""
        self._local: tuple[str, str] | None = None  # (local base, public base)
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None
        self.reported = asyncio.Condition()

    # --- what the test controls -------------------------------------------------------

    def close_window(self, number: str) -> None:
        self.closed.add(PREFIX + number.removeprefix(PREFIX))

    def open_window(self, number: str) -> None:
        self.closed.discard(PREFIX + number.removeprefix(PREFIX))

    def approve(self, sid: str) -> None:
        self.approved.add(sid)

    def add_template(self, body: str, *, approved: bool = True,
                     actions: list[dict[str, str]] | None = None) -> str:
        """A template made in the Twilio console (approved by WhatsApp unless said)."""
        kind = "twilio/quick-reply" if actions else "twilio/text"
        types: dict[str, Any] = {kind: {"body": body, **({"actions": actions} if actions
                                                        else {})}}
        sid = self._content({"friendly_name": f"template_{len(self.contents)}",
                             "language": "en", "variables": {}, "types": types})["sid"]
        if approved:
            self.approve(sid)
        return str(sid)

    def deliver_reports(self, local_base: str, public_base: str) -> None:
        """Status callbacks addressed to `public_base` are posted to `local_base`."""
        self._local = (local_base.rstrip("/"), public_base.rstrip("/"))

    def add_media(self, data: bytes, mime: str) -> str:
        """A file a person sent; its MediaUrl, as Twilio's webhook gives it."""
        n = next(self._ids)
        me = f"ME{n:032x}"
        self.media[me] = (data, mime)
        return (f"{PUBLIC_API}/2010-04-01/Accounts/{self.account_sid}/Messages/"
                f"MM{n:032x}/Media/{me}")

    async def wait_reports(self, count: int, timeout: float = 10.0) -> list[Report]:
        async with self.reported:
            await asyncio.wait_for(self.reported.wait_for(
                lambda: len(self.reports) >= count), timeout)
        return self.reports

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._session is not None:
            await self._session.close()

    # --- the Messages API's WhatsApp side ----------------------------------------------

    def body_of(self, form: Any) -> tuple[str | None, dict[str, Any] | None]:
        """What a message says (a template's variables filled in), or Twilio's error."""
        sid = str(form.get("ContentSid") or "")
        if not sid:
            return str(form.get("Body") or ""), None
        content = self.contents.get(sid)
        if content is None:
            return None, {"status": 404, "code": 20404,
                          "message": f"The requested resource /Content/{sid} was not found"}
        try:
            variables = json.loads(str(form.get("ContentVariables") or "{}"))
        except ValueError:
            return None, {"status": 400, "code": 21656,
                          "message": "The ContentVariables Parameter is invalid"}
        [(_, shape)] = content["types"].items()
        body = _VARIABLE.sub(lambda m: str(variables.get(m.group(1), m.group(0))),
                             str(shape.get("body", "")))
        return body, None

    def refused_later(self, form: Any) -> bool:
        """Accepted now, failed later with 63016: free-form (or an unapproved template) to
        a person whose window is closed."""
        to = str(form.get("To", ""))
        if not to.startswith(PREFIX) or to not in self.closed:
            return False
        return str(form.get("ContentSid") or "") not in self.approved

    def refused_now(self, form: Any) -> dict[str, Any] | None:
        if self.refuse_at_once and self.refused_later(form):
            return {"status": 400, "code": WINDOW_CLOSED, "message": (
                "Failed to send freeform message because you are outside the allowed window. "
                "If you are using WhatsApp, please use a Message Template.")}
        return None

    def report_later(self, form: Any, sid: str) -> None:
        self.undelivered.add(sid)
        callback = str(form.get("StatusCallback") or "")
        if not callback:
            return
        params = {"MessageSid": sid, "SmsSid": sid, "MessageStatus": "undelivered",
                  "SmsStatus": "undelivered", "ErrorCode": str(WINDOW_CLOSED),
                  "To": str(form.get("To", "")), "From": str(form.get("From", "")),
                  "AccountSid": self.account_sid, "ChannelPrefix": "whatsapp",
                  "ApiVersion": "2010-04-01"}
        task = asyncio.get_running_loop().create_task(self._post(callback, params))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, public_url: str, params: dict[str, str]) -> None:
        from tests.fakes.fake_twilio import post_signed

        await asyncio.sleep(0)  # after the 201 is on its way, as Twilio does
        local = public_url
        if self._local is not None and public_url.startswith(self._local[1]):
            local = self._local[0] + public_url[len(self._local[1]):]
        if self._session is None:
            self._session = aiohttp.ClientSession()
        response = await post_signed(self._session, local, public_url, params, self.auth_token)
        await response.read()
        async with self.reported:
            self.reports.append(Report(public_url, params, response.status))
            self.reported.notify_all()

    # --- the Content API and media ------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/content/v1/Content", self._create_content),
                web.get("/content/v1/Content", self._list_contents),
                web.get("/content/v1/Content/{sid}", self._fetch_content),
                web.get("/content/v1/Content/{sid}/ApprovalRequests", self._approval),
                web.get("/2010-04-01/Accounts/{sid}/Messages/{mm}/Media/{me}", self._media),
                web.get("/media-files/{me}", self._media_file)]

    def _content(self, data: dict[str, Any]) -> dict[str, Any]:
        sid = f"HX{next(self._ids):032x}"
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        content = {"sid": sid, "account_sid": self.account_sid,
                   "friendly_name": data.get("friendly_name"),
                   "language": data.get("language") or "en",
                   "variables": data.get("variables") or {}, "types": data["types"],
                   "url": f"https://content.twilio.com/v1/Content/{sid}",
                   "links": {}, "date_created": now, "date_updated": now}
        self.contents[sid] = content
        return content

    async def _create_content(self, request: web.Request) -> web.Response:
        if self.content_down:
            return _down()
        try:
            data = json.loads(await request.text())
        except ValueError:
            return _error(400, 20001, "Invalid JSON")
        types = data.get("types") if isinstance(data, dict) else None
        if not isinstance(types, dict) or len(types) != 1:
            return _error(400, 20001, "types must hold one content type")
        [(kind, shape)] = types.items()
        if kind == "twilio/quick-reply":
            actions = shape.get("actions") or []
            if not 1 <= len(actions) <= 10 or any(len(str(a.get("title", ""))) > 20
                                                 for a in actions):
                return _error(400, 20001, "quick-reply: 1 to 10 actions, titles of at most "
                                          "20 characters")
            if len(str(shape.get("body", ""))) > 1024:
                return _error(400, 20001, "quick-reply body: at most 1,024 characters")
        return web.json_response(self._content(data), status=201)

    async def _list_contents(self, request: web.Request) -> web.Response:
        if self.content_down:
            return _down()
        url = "https://content.twilio.com/v1/Content?PageSize=50&Page=0"
        return web.json_response({"contents": list(self.contents.values()), "meta": {
            "page": 0, "page_size": 50, "first_page_url": url, "previous_page_url": None,
            "url": url, "next_page_url": None, "key": "contents"}})

    async def _fetch_content(self, request: web.Request) -> web.Response:
        found = self.contents.get(request.match_info["sid"])
        if found is None:
            return _error(404, 20404, "The requested resource was not found")
        return web.json_response(found)

    async def _approval(self, request: web.Request) -> web.Response:
        sid = request.match_info["sid"]
        if sid not in self.contents:
            return _error(404, 20404, "The requested resource was not found")
        status = "approved" if sid in self.approved else "unsubmitted"
        return web.json_response({"sid": sid, "account_sid": self.account_sid,
                                  "whatsapp": {"status": status, "category": "UTILITY",
                                               "name": self.contents[sid]["friendly_name"]},
                                  "url": f"https://content.twilio.com/v1/Content/{sid}/"
                                         "ApprovalRequests"})

    async def _media(self, request: web.Request) -> web.Response:
        me = request.match_info["me"]
        pair = f"{self.account_sid}:{self.auth_token}".encode()
        expected = "Basic " + base64.b64encode(pair).decode("ascii")
        if request.headers.get("Authorization") != expected:
            return _error(401, 20003, "Authenticate")
        if me not in self.media:
            return _error(404, 20404, "The requested resource was not found")
        # Twilio answers with a redirect to the file (a short-lived address of its storage).
        raise web.HTTPTemporaryRedirect(f"/media-files/{me}")

    async def _media_file(self, request: web.Request) -> web.Response:
        data, mime = self.media[request.match_info["me"]]
        return web.Response(body=data, content_type=mime)


def _down() -> web.Response:
    return web.Response(status=503, content_type="text/html",
                        text="<html><body><h1>503 Service Unavailable</h1></body></html>")


def _error(status: int, code: int, message: str) -> web.Response:
    return web.json_response(status=status, data={
        "code": code, "message": message, "status": status,
        "more_info": f"https://www.twilio.com/docs/errors/{code}"})


def whatsapp_params(from_: str, body: str, *, sid: str, to: str, account_sid: str,
                    profile_name: str = "Alice", media: list[tuple[str, str]] | None = None,
                    button: tuple[str, str] | None = None,
                    replied_to: str | None = None) -> dict[str, str]:
    """The form Twilio posts for an incoming WhatsApp message (with media: (url, type); a
    quick-reply press: (payload, text))."""
    number = from_.removeprefix(PREFIX)
    params = {"MessageSid": sid, "SmsSid": sid, "SmsMessageSid": sid,
              "AccountSid": account_sid, "From": PREFIX + number,
              "To": PREFIX + to.removeprefix(PREFIX), "Body": body, "NumSegments": "1",
              "NumMedia": str(len(media or [])), "ProfileName": profile_name,
              "WaId": number.lstrip("+"), "SmsStatus": "received", "ApiVersion": "2010-04-01",
              "MessageType": "text", "ChannelMetadata": json.dumps({
                  "type": "whatsapp", "data": {"context": {"ProfileName": profile_name,
                                                            "WaId": number.lstrip("+")}}})}
    for i, (url, mime) in enumerate(media or []):
        params[f"MediaUrl{i}"] = url
        params[f"MediaContentType{i}"] = mime
        params["MessageType"] = mime.split("/")[0] if not mime.startswith("application/") \
            else "document"
    if button is not None:
        params["ButtonPayload"], params["ButtonText"] = button
        params["MessageType"] = "button"
        params["Body"] = button[1]
    if replied_to:
        params["OriginalRepliedMessageSid"] = replied_to
    return params
