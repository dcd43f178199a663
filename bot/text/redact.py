"""Secrets out of sight: credentials in URLs are masked before any text reaches a log or the
screen, whoever wrote the line (our code, aiohttp, httpx, openai, asyncpg, redis)."""

from __future__ import annotations

import logging
import re

MASK = "***"

# scheme://user:password@host or scheme://token@host. The credentials end at the LAST '@' before
# the host part: passwords may contain '@' when they were not percent-encoded.
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<creds>[^\s/?#'\"<>]*)@(?=[^\s@/?#'\"<>]+)")


# ?password=..., &api_key=...: credentials passed as query parameters.
_QUERY_SECRETS = re.compile(
    r"(?P<key>[?&](?:password|passwd|pwd|token|access_token|api_key|apikey|key|secret)=)"
    r"(?P<value>[^&\s#'\"]+)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """A URL fit for logs and the screen: its password (or lone token) replaced by ***."""
    return redact_text(url)


def redact_text(text: str) -> str:
    """Every URL in the text with its credentials masked; the user name stays (it helps)."""
    if "://" not in text:
        return text
    if "@" in text:
        text = _URL_CREDENTIALS.sub(_mask, text)
    if "=" in text:
        text = _QUERY_SECRETS.sub(lambda m: m.group("key") + MASK, text)
    return text


def _mask(match: re.Match[str]) -> str:
    creds = match.group("creds")
    user = creds.split(":", 1)[0] if ":" in creds else ""
    return f"{match.group('scheme')}{user}:{MASK}@" if user else f"{match.group('scheme')}{MASK}@"


class RedactingFilter(logging.Filter):
    """Masks URL credentials in a record's message (arguments included) and exception text.

    Installed on the root logger's handlers, so it sees every library's records too."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler to report
            return True
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            formatter = logging.Formatter()
            record.exc_text = formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def install_redaction(logger: logging.Logger | None = None) -> None:
    """Put the filter on every handler of the logger (root by default), once each."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
