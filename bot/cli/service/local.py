"""Which of the servers Valet uses run on this machine: the systemd units it is then ordered
after (bot.cli.service.units), so a reboot starts Postgres and Redis before it.

A URL points here when its host is localhost, a loopback address, or a Unix socket (a
postgresql:// URL's `host=/path` parameter; a unix:// Redis URL). The unit
names are Debian's and Ubuntu's (postgresql.service, redis-server.service); `Wants=` of a
unit a machine does not have is ignored by systemd.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import parse_qs, urlsplit

from bot.cli.service.units import POSTGRES_UNIT, REDIS_UNIT
from bot.config import Settings


def local_servers(settings: Settings) -> tuple[str, ...]:
    """The units of the local servers this configuration uses, Postgres first."""
    found: list[str] = []
    if settings.database_url.startswith("postgres") and _here(settings.database_url):
        found.append(POSTGRES_UNIT)
    if settings.redis_url and _here(settings.redis_url):
        found.append(REDIS_UNIT)
    return tuple(found)


def _here(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return True  # redis over a socket: on this machine
    socket_host = parse_qs(parts.query).get("host", [""])[0]
    if socket_host.startswith("/"):
        return True
    host = parts.hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
