"""Who is on the other end of an HTTP request, behind a reverse proxy.

A proxy (Caddy, in deploy/Caddyfile) connects from its own address and says who its client
was in `X-Forwarded-For`. That header is believed only from a peer in `http.trusted_proxies`
(default: this machine, where the shipped Caddyfile runs): anyone else could write any address
into it. The header is read from the right: each trusted proxy appends the address it saw, so
the first address from the right that is not a trusted proxy is the client.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from aiohttp import web

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = ("127.0.0.0/8", "::1/128")
MAX_HOPS = 20  # a longer header is not read past this many addresses (from the right)


def networks(entries: Sequence[str]) -> tuple[Network, ...]:
    """"10.0.0.0/8", "192.168.1.7", "::1" as networks (ValueError for anything else)."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):  # "[2001:db8::1]:443"
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:  # "203.0.113.9:5123"
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None,
             trusted: Sequence[Network]) -> bool:
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address.version == net.version and address in net for net in trusted)


def client_address(request: web.BaseRequest, trusted: Sequence[Network]) -> str:
    """The client's address: the peer's, unless the peer is a trusted proxy; then the first
    address of `X-Forwarded-For`, from the right, that is not a trusted proxy."""
    peer = request.remote or ""
    if not _trusted(_address(peer), trusted):
        return peer
    hops = [hop for value in request.headers.getall("X-Forwarded-For", ())
            for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops[-MAX_HOPS:]):
        address = _address(hop)
        if address is None:  # not an address: what a trusted proxy wrote, as it is
            return hop.strip()[:64]
        if not _trusted(address, trusted):
            return str(address)
    return str(_address(hops[0])) if hops else peer
