"""Whether a database URL has a form Valet can use, said in plain words (checked with the rest
of the configuration, and again where a database is opened); and the Bot API server's address
(VALET_TELEGRAM_API_URL) in the one form Valet builds its calls on."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from bot.text.redact import redact_url


def database_url_problem(url: str) -> str | None:
    """What is wrong with the form of a database URL, in plain words; None if it is usable."""
    if url.startswith("sqlite:"):
        if not url.startswith("sqlite://"):
            return (f"{redact_url(url)!r} is not a SQLite URL: write sqlite:///relative/path.db "
                    "or sqlite:////absolute/path.db (three or four slashes)")
        rest = url.removeprefix("sqlite://")
        if rest and not rest.startswith("/"):
            return (f"{redact_url(url)!r} names a host; SQLite has none: write "
                    f"sqlite:///{rest} (three slashes) for a file")
        if rest.strip("/") == "":
            return "names no file: write sqlite:///path/to/valet.db or sqlite:///:memory:"
        return None
    if url.startswith(("postgres://", "postgresql://")):
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018  (raises on a port that is not a number)
        except ValueError as err:
            return f"{redact_url(url)!r} is not a valid Postgres URL ({err})"
        if not parts.hostname and "host=" not in parts.query:
            return f"{redact_url(url)!r} names no server: write postgresql://user@host/dbname"
        return None
    scheme = url.split(":", 1)[0] if ":" in url else url
    return (f"{scheme!r} databases are not supported: use sqlite:///path/to/valet.db "
            "(embedded) or postgresql://user@host/dbname")


_TOKEN_IN_PATH = re.compile(r"/bot\d+:")


def telegram_api_problem(url: str) -> str | None:
    """What is wrong with VALET_TELEGRAM_API_URL, in plain words (never the token a pasted
    URL may carry); None if it is usable. Both https://host and https://host/bot are: Valet
    adds /bot<token>/<method> itself."""
    if _TOKEN_IN_PATH.search(url):
        return ("has the bot token in it: give the Bot API server's address alone, e.g. "
                "https://api.telegram.org (Valet adds /bot<token>)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError as err:
        return f"{redact_url(url)!r} is not a URL ({err})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (f"{redact_url(url)!r} is not an http(s) address: write the Bot API server's "
                "address, e.g. https://api.telegram.org (Valet adds /bot<token>)")
    if parts.query or parts.fragment:
        return (f"{redact_url(url)!r} has a query or fragment: write the Bot API server's "
                "address alone, e.g. https://api.telegram.org")
    return None


def telegram_api_base(url: str) -> str:
    """The address calls are built on: https://host/bot and https://host/ are https://host
    (`/bot<token>/<method>` and `/file/bot<token>/<path>` are added to it)."""
    base = url.rstrip("/")
    return base.removesuffix("/bot").rstrip("/")
