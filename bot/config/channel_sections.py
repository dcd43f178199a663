"""The sections of valet.yaml for the ways in: SMS (`sms:`), Telegram (`telegram:`), the HTTP
server (`http:`) and the owner's web console (`console:`), and why a public webhook address
must be https. A channel that owns its section declares it in its package instead
(bot.config.channel_settings: WhatsApp's is channels/whatsapp/settings.py)."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal
from urllib.parse import urlsplit

import pydantic

from bot.config.sections import Section


def plain_http_problem(url: str) -> str | None:
    """Webhooks carry people's messages and the secrets that sign them: a public address must
    be https. Plain http only for this machine (localhost, 127.x, ::1), where a tunnel or a
    proxy on the same host adds the TLS (docs/going-live.md)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{url!r} is not an http(s) URL such as https://valet.example.com"
    if parts.scheme == "https":
        return None
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return (f"{url!r} is plain http: Twilio and Telegram send webhooks only to https "
            "addresses and they carry people's messages; put a TLS proxy (Caddy) or a tunnel "
            "(cloudflared) in front and use its https:// address")


class SmsSettings(Section):
    """SMS over Twilio. Credentials come only from the environment (VALET_TWILIO_ACCOUNT_SID,
    VALET_TWILIO_AUTH_TOKEN)."""

    from_number: str | None = None  # Valet's Twilio number, E.164
    messaging_service_sid: str | None = None  # or a Messaging Service (MG...) instead
    # Numbers written without a country code (allowlists, owner numbers) are read as this
    # country's (ISO code, e.g. "US", "GB"); None: every number must start with "+".
    default_region: str | None = None
    max_request_bytes: int = pydantic.Field(64 * 1024, ge=1024)  # a webhook body, at most
    # A triggered run's reply by SMS (the morning summary) fits this many segments: a longer
    # one gets one shortening pass, then is cut after its last whole sentence that fits.
    summary_max_segments: int = pydantic.Field(2, ge=1, le=10)
    # Any other SMS fits this many segments: a longer answer gets one shortening pass, then is
    # cut after its last whole sentence that fits with "(reply MORE for the rest)".
    max_segments: int = pydantic.Field(3, ge=1, le=10)
    # Letters GSM-7 lacks (á, ç, ã) sent as plain letters (a, c, a), so one accent does not
    # turn a message into UCS-2 (70 characters a segment instead of 160): true, false, or
    # unset: by the reader's language (on for en, es, fr, de; off for pt).
    plain_letters: bool | None = None
    # A number that is not let in gets at most one SMS per this many hours, whatever it sends;
    # and all such numbers together at most `stranger_replies_per_hour` (then silence, and
    # the owner is told once).
    stranger_reply_hours: float = pydantic.Field(24.0, gt=0)
    stranger_replies_per_hour: int = pydantic.Field(10, ge=0)
    # A reply given at the door (HELP/INFO, a picture alone, a picture with text) goes to a
    # person at most once per this many minutes for each kind, whatever they send (bot.meter).
    door_reply_minutes: float = pydantic.Field(10.0, gt=0)
    # Countries (ISO codes: US, GB...) Valet may send SMS to, for any reason; None: those of
    # `from_number` and the owner's phone numbers (`valet doctor` shows the list).
    allowed_countries: list[str] | None = None
    # What one segment costs, in US dollars: one price, or one per country (ISO code) with
    # `default` for the rest; None: console.sms_price_per_segment.
    price_per_segment: float | dict[str, float] | None = None

    @pydantic.field_validator("allowed_countries")
    @classmethod
    def _country_codes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_country_code(c) for c in value]

    @pydantic.field_validator("price_per_segment")
    @classmethod
    def _prices(cls, value: float | dict[str, float] | None
                ) -> float | dict[str, float] | None:
        if isinstance(value, dict):
            prices = {}
            for key, price in value.items():
                if price < 0:
                    raise ValueError(f"{key}: a price is 0 or more")
                prices[key if key == "default" else _country_code(key)] = price
            return prices
        if value is not None and value < 0:
            raise ValueError("a price is 0 or more")
        return value


def _country_code(value: str) -> str:
    code = value.strip().upper()
    if not re.fullmatch(r"[A-Z]{2}", code):
        raise ValueError(f"{value!r} is not a country code: use two letters such as US, GB, FR")
    return code


class HTTPSettings(Section):
    """Where `valet serve` listens (webhooks, health checks)."""

    host: str = "127.0.0.1"
    port: int = pydantic.Field(8080, ge=0, le=65535)
    # On SIGTERM, how long running turns get to finish (the rest is redone at the next start).
    shutdown_grace_seconds: float = pydantic.Field(20.0, ge=0)
    # A request body (a webhook, an event) that has not fully arrived by then is refused
    # (408): a client that sends half a body does not hold a connection open.
    body_timeout_seconds: float = pydantic.Field(10.0, gt=0)
    # Reverse proxies whose X-Forwarded-For is believed (addresses or networks): the console's
    # sign-in counts attempts per client behind them (bot/app/client_address.py). Default:
    # this machine, where the shipped Caddyfile runs; with compose, add its network.
    trusted_proxies: list[str] = ["127.0.0.0/8", "::1/128"]

    @pydantic.field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network such as "
                                 "127.0.0.1 or 10.0.0.0/8") from None
        return value


class ConsoleSettings(Section):
    """The owner's web console at /console (bot/app/console), served by `valet serve`."""

    enabled: bool = False
    # The address the owner's browser opens (login links start with it); None: public_url,
    # else this machine's http.host and http.port (reached through an SSH tunnel).
    url: str | None = None
    session_hours: float = pydantic.Field(12.0, gt=0, le=24 * 30)  # then sign in again
    # The Usage page's estimate: what one SMS segment costs (Twilio's price for your country).
    sms_price_per_segment: float = pydantic.Field(0.0083, ge=0)
    currency: str = pydantic.Field("USD", min_length=1, max_length=8)
    # Sign-in attempts one address may make in a window (a used or unknown link counts).
    login_attempts: int = pydantic.Field(10, gt=0)
    login_window_minutes: int = pydantic.Field(15, gt=0)

    @pydantic.field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+/?$", value):
            raise ValueError("must be the console's base address, such as "
                             "https://valet.example.com or http://127.0.0.1:8080")
        return value.rstrip("/") if value else value


class TelegramSettings(Section):
    mode: Literal["polling", "webhook"] = "polling"
    groups: bool = False  # answer in groups (only when mentioned or replied to)
    # Webhook mode: the public https URL Telegram posts to (…/telegram/webhook is added);
    # None: the server's public_url.
    webhook_url: str | None = None
    # Only from the environment: VALET_TELEGRAM_TOKEN (turns the channel on),
    # VALET_TELEGRAM_WEBHOOK_SECRET, VALET_TELEGRAM_API_URL (another Bot API server).
    token: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    webhook_secret: str | None = pydantic.Field(default=None, exclude=True, repr=False)
    api_url: str | None = pydantic.Field(default=None, exclude=True)

    @pydantic.field_validator("webhook_url")
    @classmethod
    def _webhook_over_https(cls, value: str | None) -> str | None:
        problem = plain_http_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value
