"""Twilio's REST API as the channels use it: the account (secrets from the environment only),
the async HTTP client (pointed at another base when VALET_TWILIO_API_URL says so: tests), and
Twilio's errors as the channel port's kinds: worth retrying (429, 5xx, network), the account
refused (every message waits: bot.gateway.health), or no retry will help."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from twilio.base.exceptions import TwilioException
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.http.response import Response
from twilio.rest import Client

from bot.channel import ChannelDown, PermanentSendError, TransientSendError

ACCOUNT_ENV, TOKEN_ENV, API_URL_ENV = ("VALET_TWILIO_ACCOUNT_SID", "VALET_TWILIO_AUTH_TOKEN",
                                       "VALET_TWILIO_API_URL")
TWILIO_API = "https://api.twilio.com"
# Twilio's other API hosts, as paths under VALET_TWILIO_API_URL when that is set (tests).
TWILIO_HOSTS = {TWILIO_API: "", "https://messaging.twilio.com": "/messaging",
                "https://content.twilio.com": "/content"}
OPTED_OUT = 21610  # "Attempt to send to unsubscribed recipient"
INVALID_NUMBERS = {21211, 21214, 21217, 21401, 21407, 21408, 21612, 21614,
                   63003, 63024}  # (63003, 63024: not a WhatsApp user / invalid recipient)
# The account itself is refused (bad credentials, an account or number that is not there):
# nothing can be sent until it is fixed, so messages wait (bot.gateway.health).
ACCOUNT_REFUSED = {20003, 20404, 20005}


@dataclass(frozen=True)
class TwilioAccount:
    """Where and as whom to send. The secrets come from the environment only."""

    account_sid: str
    auth_token: str = field(repr=False)  # never printed
    from_number: str | None = None
    messaging_service_sid: str | None = None
    api_url: str | None = None  # VALET_TWILIO_API_URL: another REST base (tests)
    status_callback_url: str | None = None  # public URL of the channel's status webhook


def credentials_missing(env: Mapping[str, str]) -> list[str]:
    """The account's environment variables that are not set."""
    return [name for name in (ACCOUNT_ENV, TOKEN_ENV) if not env.get(name)]


def _retry_after(headers: Any) -> float | None:
    try:
        value = headers.get("Retry-After") if headers is not None else None
        return max(0.0, float(value)) if value else None
    except (TypeError, ValueError):
        return None


class ValetTwilioHttpClient(AsyncTwilioHttpClient):
    """Twilio's async HTTP client, pointed at another base URL when asked, and turning what
    is worth retrying into TransientSendError with its Retry-After (the response headers are
    gone by the time twilio raises its own exception)."""

    def __init__(self, api_url: str | None = None, timeout: float = 15.0) -> None:
        super().__init__(timeout=timeout)
        self.api_url = api_url.rstrip("/") if api_url else None

    async def request(self, method: str, url: str, params: Any = None, data: Any = None,
                      headers: Any = None, *args: Any, **kwargs: Any) -> Response:
        # twilio's async client hands a JSON API's body (the Content API's) to aiohttp as a
        # form, which the API refuses: sent as the JSON it says it is, as its sync client does.
        if isinstance(data, dict) and (headers or {}).get("Content-Type") == "application/json":
            data = json.dumps({k: v for k, v in data.items() if v is not None})
        for host, path in TWILIO_HOSTS.items():
            if self.api_url and url.startswith(host):
                url = self.api_url + path + url[len(host):]
                break
        try:
            response = await super().request(method, url, params, data, headers, *args,
                                             **kwargs)
        except (aiohttp.ClientError, TimeoutError) as err:
            raise TransientSendError(f"Twilio unreachable: {type(err).__name__}: {err}") from err
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientSendError(f"Twilio answered HTTP {response.status_code}",
                                     retry_after=_retry_after(response.headers))
        return response


def client_for(account: TwilioAccount, timeout: float = 15.0
               ) -> tuple[Client, ValetTwilioHttpClient]:
    """A REST client on the account, and its HTTP client (close it when done)."""
    http = ValetTwilioHttpClient(account.api_url, timeout=timeout)
    return Client(account.account_sid, account.auth_token, http_client=http), http


def permanent(err: TwilioException, *, unreachable_what: str = "not a number that can "
              "receive SMS") -> PermanentSendError | ChannelDown:
    """A refusal as the port's kind: the account refused (ChannelDown), the person opted
    out, an address that cannot receive (`unreachable_what` says what it is not), or else."""
    code = getattr(err, "code", None)
    status = getattr(err, "status", None)
    what = f"Twilio refused the message (HTTP {status}, error {code})"
    if code in ACCOUNT_REFUSED or status == 401:
        return ChannelDown(f"Twilio rejected Valet's account (HTTP {status}, error {code}): "
                           f"check {ACCOUNT_ENV}, {TOKEN_ENV} and the sending number")
    if code == OPTED_OUT:
        return PermanentSendError(f"{what}: the recipient replied STOP", opted_out=True)
    if code in INVALID_NUMBERS:
        return PermanentSendError(f"{what}: {unreachable_what}", unreachable=True)
    return PermanentSendError(what)
