"""web_fetch: read a web page as plain text, without letting the assistant reach private networks.

SSRF guard: private, loopback, link-local, multicast, reserved, unspecified and other non-global
addresses (IPv4 and IPv6, including IPv4 embedded in IPv6) are refused unless settings allow
them. The check is on the address actually connected to: each call has its own TCPConnector
whose GuardedResolver drops refused addresses from every DNS answer (a name that rebinds to
127.0.0.1 is still caught). aiohttp skips the resolver for IP literals, so literal hosts are
checked before connecting. Redirects are followed by hand (at most 5), each hop checked again.
`ctx.http` is not used: a shared session's connector cannot carry the per-call policy, and a
per-call session costs well under a millisecond next to a fetch's network round trips.

Settings (tools.web_fetch.*): allow_private_addresses (bool), allowed_hosts (names or IPs exempt
from the guard), max_bytes (download cap, default 2 MB), timeout_seconds (default 20, the whole
fetch including turning HTML into text), parse_timeout_seconds (default 10: HTML to text runs
in a worker process killed after this; see bot/plumbing/offload.py and agents/tools/html_text.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from typing import TYPE_CHECKING

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

from bot.contracts.tool_context import ToolExecutionContext
from bot.plumbing.offload import WorkFailed, WorkTimeout, run_bounded
from bot.plumbing.streams import read_capped
from bot.text.untrusted import quote_untrusted
from bot.tools.registry import READS, tool

if TYPE_CHECKING:
    from agents.tools.html_text import PageText

MAX_REDIRECTS = 5
HINT = ("set tools.web_fetch.allow_private_addresses (or list the host in "
        "tools.web_fetch.allowed_hosts) to allow")
HEADERS = {"User-Agent": "Valet/0.1 (personal assistant)",
           "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"}
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class FetchRefused(ValueError):
    """The URL, or the address its host resolves to, is not allowed."""


class AddressRefused(FetchRefused):
    """Raised by GuardedResolver when every address of a name is refused."""


def address_problem(ip: IPAddress) -> str | None:
    """Why `ip` must not be fetched ("loopback address", ...), or None when it is public."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)
        if embedded is not None:
            return address_problem(embedded)
    for attribute in ("unspecified", "loopback", "link_local", "multicast", "reserved",
                      "private"):
        if getattr(ip, f"is_{attribute}"):
            return f"{attribute.replace('_', '-')} address"
    return None if ip.is_global else "non-public address"


def _ip(text: str) -> IPAddress | None:
    """The IP address written in `text` (None for a name)."""
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(text)
    with contextlib.suppress(OSError):  # legacy forms the OS accepts: 127.1, 2130706433
        return ipaddress.IPv4Address(socket.inet_aton(text))
    return None


def _host_key(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


class GuardedResolver(AbstractResolver):
    """Wraps a resolver and drops refused addresses; refuses a name with none left."""

    def __init__(self, allowed_hosts: frozenset[str] = frozenset(),
                 inner: AbstractResolver | None = None) -> None:
        self._allowed = allowed_hosts
        self._inner = inner or DefaultResolver()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if _host_key(host) in self._allowed:
            return results
        verdicts = [(r["host"], address_problem(ip) if (ip := _ip(r["host"])) is not None
                     else "bad address") for r in results]
        if verdicts and all(problem for _, problem in verdicts):
            raise AddressRefused(f"{host} resolves to {verdicts[0][0]} ({verdicts[0][1]})")
        return [r for r, (_, problem) in zip(results, verdicts, strict=True) if not problem]

    async def close(self) -> None:
        await self._inner.close()


def _check_url(url: str | URL, allow_private: bool, allowed: frozenset[str]) -> URL:
    try:
        parsed = URL(str(url))
    except (ValueError, TypeError) as err:
        raise FetchRefused(f"refusing to fetch {url}: not a valid URL ({err})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise FetchRefused(f"refusing to fetch {url}: only http:// and https:// URLs with a "
                           "host are allowed")
    if not allow_private and _host_key(parsed.host) not in allowed:
        ip = _ip(_host_key(parsed.host))
        if ip is not None and (problem := address_problem(ip)):
            raise FetchRefused(f"refusing to fetch {url}: {problem}; {HINT}")
    return parsed


def _decode_text(body: bytes, charset: str | None) -> str:
    with contextlib.suppress(LookupError):
        return body.decode(charset or "utf-8", errors="replace")
    return body.decode("utf-8", errors="replace")


async def _page_text(body: bytes, charset: str | None, timeout: float) -> PageText:
    from agents.tools.html_text import page_text  # lxml: loaded when a page is first read

    """Parsing runs in a worker process, killed after `timeout` s: a hostile page costs at
    most that, and never the event loop's time."""
    try:
        return await run_bounded(page_text, body, charset, timeout=timeout)
    except WorkTimeout:
        raise ValueError(f"the page could not be turned into text within {timeout:g} s"
                         ) from None
    except WorkFailed as err:
        raise ValueError(f"the page could not be turned into text ({err})") from None


async def _render(response: aiohttp.ClientResponse, body: bytes, capped: bool, max_chars: int,
                  redirected_from: str | None, parse_timeout: float) -> str:
    mime = response.content_type
    is_html = mime in ("text/html", "application/xhtml+xml") or (
        mime == "application/octet-stream"
        and body[:200].lstrip().lower().startswith((b"<!doctype html", b"<html")))
    header = [f"URL: {response.url}", f"Status: {response.status} {response.reason or ''}",
              f"Content-Type: {mime}"]
    if redirected_from:
        header[0] += f" (redirected from {redirected_from})"
    if is_html:
        page = await _page_text(body, response.charset, parse_timeout)
        text = page.text
        header.append(f"Title: {page.title or '(none)'}")
        if page.too_deep:
            header.append("Note: the page nests deeper than the parser follows; text inside "
                          "the deepest parts is not shown.")
    elif mime.startswith("text/") or mime.endswith(("json", "xml", "javascript", "yaml")):
        text = _decode_text(body, response.charset).strip()
    else:
        text = f"(binary content, {len(body)} bytes read; not shown)"
    if capped:
        header.append(f"Note: download stopped after {len(body)} bytes (size limit).")
    if len(text) > max_chars:
        header.append(f"Note: text truncated to {max_chars} of {len(text)} characters.")
        text = text[:max_chars]
    # The page's words are data: a page that says "ignore your instructions" is quoted.
    return "\n".join(line.rstrip() for line in header) + "\n\n" + quote_untrusted(
        text, note="the text below is the web page's content, written by its author")


@tool(safe_to_repeat=True, does=READS)
async def web_fetch(ctx: ToolExecutionContext, url: str, max_chars: int = 20000) -> str:
    """Fetch a web page (http or https) and return its status, final URL, title and readable
    text. Use it to read a specific page or API URL; it does not search the web.

    Args:
        url: The full URL, starting with http:// or https://.
        max_chars: Maximum characters of page text to return (100-100000).
    """
    settings = ctx.settings
    allow_private = bool(settings.get("allow_private_addresses", False))
    hosts = settings.get("allowed_hosts") or []
    allowed = frozenset(_host_key(h) for h in ([hosts] if isinstance(hosts, str) else hosts))
    max_bytes = int(settings.get("max_bytes", 2_000_000))
    timeout = float(settings.get("timeout_seconds", 20))
    parse_timeout = float(settings.get("parse_timeout_seconds", 10))
    max_chars = max(100, min(int(max_chars), 100_000))
    current = _check_url(url, allow_private, allowed)
    connector = aiohttp.TCPConnector(
        resolver=None if allow_private else GuardedResolver(allowed), use_dns_cache=False)
    async with aiohttp.ClientSession(connector=connector, headers=HEADERS) as session:
        try:
            async with asyncio.timeout(timeout):
                for hop in range(MAX_REDIRECTS + 1):
                    try:
                        async with session.get(current, allow_redirects=False) as response:
                            location = response.headers.get("Location")
                            if response.status in (301, 302, 303, 307, 308) and location:
                                current = _check_url(current.join(URL(location)),
                                                     allow_private, allowed)
                                continue
                            body, capped = await read_capped(response.content, max_bytes)
                            return await _render(response, body, capped, max_chars,
                                                 url if hop else None, parse_timeout)
                    except AddressRefused as err:  # from the resolver, at connect time
                        raise FetchRefused(f"refusing to fetch {current}: {err}; {HINT}"
                                           ) from None
        except TimeoutError:
            raise ConnectionError(f"fetching {url} timed out after {timeout:g} s") from None
        except aiohttp.ClientError as err:
            raise ConnectionError(f"could not fetch {current}: {err}") from None
    raise ConnectionError(f"too many redirects (more than {MAX_REDIRECTS}) starting from {url}")
