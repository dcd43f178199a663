"""A WhatsApp message's media, fetched when its turn runs (bot.turn.media.MediaSource): the
MediaUrl Twilio gave in the webhook is the durable reference the inbox keeps. Twilio serves
it with the account's basic auth and redirects to the file; only Twilio's own API host is
ever fetched (the URL came in a signed webhook, but Valet fetches nothing else), and never
more than WhatsApp's limit for the kind."""

from __future__ import annotations

import base64
from urllib.parse import urlsplit

import aiohttp

from bot.contracts.envelopes import MediaRef
from bot.plumbing.streams import read_capped
from bot.turn.media import MediaUnavailable
from channels.twilio.rest import TWILIO_API, TwilioAccount
from channels.whatsapp.wire import MAX_IMAGE_BYTES, MAX_MEDIA_BYTES


class MediaFetcher:
    def __init__(self, account: TwilioAccount, timeout: float = 30.0) -> None:
        self.account = account
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def _url(self, ref: MediaRef) -> str:
        url = ref.ref
        if urlsplit(url).scheme != "https" or urlsplit(url).hostname != urlsplit(
                TWILIO_API).hostname:
            raise MediaUnavailable("not a Twilio media address")
        if self.account.api_url:  # VALET_TWILIO_API_URL (tests)
            url = self.account.api_url.rstrip("/") + url[len(TWILIO_API):]
        return url

    async def fetch(self, ref: MediaRef) -> bytes:
        limit = MAX_IMAGE_BYTES if ref.kind == "photo" else MAX_MEDIA_BYTES
        url = self._url(ref)
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout))
        try:
            async with self._session.get(url, headers=basic_auth(self.account)) as response:
                if response.status != 200:
                    raise MediaUnavailable(f"Twilio answered HTTP {response.status}")
                data, more = await read_capped(response.content, limit)
        except (aiohttp.ClientError, TimeoutError) as err:
            raise MediaUnavailable(f"{type(err).__name__}: {err}") from err
        if more:
            raise MediaUnavailable(f"over {limit} bytes")
        return data

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def basic_auth(account: TwilioAccount) -> dict[str, str]:
    """The account's HTTP basic credentials as a header: aiohttp deprecates its `auth=` (and
    BasicAuth) for aiohttp 4; it drops the header, as it dropped `auth=`, when a redirect
    leaves the origin (Twilio's media redirects to its storage)."""
    pair = f"{account.account_sid}:{account.auth_token}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}
