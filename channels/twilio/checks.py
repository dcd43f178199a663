"""Is the Twilio account usable, as `valet onboard` and `valet doctor` ask it: the credentials
(the account itself), the number (on this account, able to send SMS, its webhook) or the
Messaging Service. Each answer is a value, or TwilioUnusable with one line saying what to fix;
nothing here prints a secret."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from twilio.base.exceptions import TwilioException
from twilio.rest import Client

from bot.channel import TransientSendError
from channels.twilio.rest import ValetTwilioHttpClient

AUTH_FAILED = 20003
NOT_FOUND = 20404
T = TypeVar("T")


class TwilioUnusable(Exception):
    """One line for the operator: what Twilio said and what to do."""


class CredentialsRefused(TwilioUnusable):
    """Twilio refused the SID and token: every other call would be refused the same way."""


class NotKnown(TwilioUnusable):
    """The account has no such thing (HTTP 404, error 20404)."""


@dataclass(frozen=True)
class NumberState:
    sid: str  # PN...
    number: str
    sms: bool  # can send and receive SMS
    sms_url: str  # where Twilio posts an incoming SMS ("" when unset)


class TwilioCheck:
    """A short-lived client for the checks; `await close()` after."""

    def __init__(self, account_sid: str, auth_token: str, api_url: str | None = None) -> None:
        self.account_sid = account_sid
        self.http = ValetTwilioHttpClient(api_url, timeout=10.0)
        self.client = Client(account_sid, auth_token, http_client=self.http)

    async def close(self) -> None:
        await self.http.close()

    async def account(self) -> str:
        """The account's name; TwilioUnusable when the SID and token are not accepted."""
        found = await self.asked("the account", lambda client: client.api.v2010.accounts(
            self.account_sid).fetch_async())
        status = str(found.status or "")
        if status and status != "active":
            raise TwilioUnusable(f"the Twilio account is {status}, not active: reactivate it "
                                 "in the Twilio console")
        return str(found.friendly_name or self.account_sid)

    async def number(self, number: str) -> NumberState:
        """The number as this account holds it; TwilioUnusable when it is not the
        account's."""
        found = await self.asked(f"the number {number}", lambda client: client
                                 .incoming_phone_numbers.list_async(phone_number=number, limit=5))
        for item in found:
            if item.phone_number == number:
                caps = item.capabilities if isinstance(item.capabilities, dict) else {}
                return NumberState(str(item.sid), number, bool(caps.get("sms")),
                                   str(item.sms_url or ""))
        raise TwilioUnusable(f"{number} is not a number of this Twilio account: use one the "
                             "account owns (Phone Numbers > Manage > Active numbers)")

    async def point_sms_webhook(self, number: NumberState, url: str) -> None:
        """Incoming SMS to this number are posted to `url` (HTTP POST) from now on."""
        await self.asked(f"the number {number.number}", lambda client: client
                         .incoming_phone_numbers(number.sid).update_async(sms_url=url,
                                                                          sms_method="POST"))

    async def asked(self, what: str, call: Callable[[Client], Awaitable[T]]) -> T:
        """One request of the REST API about `what` ("the content template HX..."), its
        refusal worded for the operator (TwilioUnusable; NotKnown for a 404)."""
        try:
            return await call(self.client)
        except TwilioException as err:
            raise _unusable(err, what) from err
        except TransientSendError as err:
            raise TwilioUnusable(f"cannot reach Twilio: {err}") from err

    async def messaging_service(self, sid: str) -> str:
        found = await self.asked(f"the Messaging Service {sid}",
                                 lambda client: client.messaging.v1.services(sid).fetch_async())
        return str(found.friendly_name or sid)


def _unusable(err: TwilioException, what: str) -> TwilioUnusable:
    code, status = _status_of(err)
    if code == AUTH_FAILED or status == 401:
        return CredentialsRefused("Twilio refused the credentials (error 20003): check "
                              "VALET_TWILIO_ACCOUNT_SID and VALET_TWILIO_AUTH_TOKEN (Twilio "
                              "console, Account info)")
    if code == NOT_FOUND or status == 404:
        return NotKnown(f"Twilio does not know {what} on this account (error 20404)")
    return TwilioUnusable(f"Twilio refused to show {what} (HTTP {status}, error {code})")


def _status_of(err: TwilioException) -> tuple[int | None, int | None]:
    """(Twilio error code, HTTP status): a fetch's error carries them; a list's ("Unable to
    fetch page") carries only the response, whose JSON body has the code."""
    code, status = getattr(err, "code", None), getattr(err, "status", None)
    response = err.args[1] if len(err.args) > 1 else None
    answered = getattr(response, "status_code", None)
    if status is None and isinstance(answered, int):
        status = answered
        try:
            body = json.loads(getattr(response, "text", "") or "{}")
        except ValueError:
            body = {}
        found = body.get("code") if isinstance(body, dict) else None
        code = found if isinstance(found, int) else code
    return code, status
