"""Who a request came from behind a reverse proxy (issue 34 item 5): X-Forwarded-For is
believed only from a trusted proxy, and read from the right."""

from __future__ import annotations

from unittest import mock

import pytest
from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict

from bot.app.client_address import LOOPBACK, client_address, networks


def request(peer: str, *forwarded: str):  # type: ignore[no-untyped-def]
    transport = mock.Mock()
    transport.get_extra_info.side_effect = \
        lambda name, default=None: (peer, 40000) if name == "peername" else default
    headers = CIMultiDict(("X-Forwarded-For", value) for value in forwarded)
    return make_mocked_request("POST", "/console/login", headers=headers, transport=transport)


TRUSTED = networks(LOOPBACK)


@pytest.mark.parametrize("peer,forwarded,client", [
    ("203.0.113.9", (), "203.0.113.9"),  # no proxy
    ("203.0.113.9", ("198.51.100.1",), "203.0.113.9"),  # an untrusted peer's say-so: ignored
    ("127.0.0.1", (), "127.0.0.1"),  # this machine, no header
    ("127.0.0.1", ("198.51.100.1",), "198.51.100.1"),  # Caddy on this machine
    ("127.0.0.1", ("6.6.6.6, 198.51.100.1",), "198.51.100.1"),  # the client's own claim first
    ("127.0.0.1", ("6.6.6.6", "198.51.100.1"), "198.51.100.1"),  # two header lines
    ("127.0.0.1", ("198.51.100.1, 127.0.0.1",), "198.51.100.1"),  # two proxies here
    ("127.0.0.1", ("127.0.0.2",), "127.0.0.2"),  # a client on this machine
    ("::1", ("2001:db8::7",), "2001:db8::7"),
    ("::ffff:127.0.0.1", ("198.51.100.1",), "198.51.100.1"),  # IPv4 as IPv6
    ("127.0.0.1", ("198.51.100.1:5123",), "198.51.100.1"),  # with a port
    ("127.0.0.1", ("[2001:db8::7]:443",), "2001:db8::7"),
    ("127.0.0.1", ("6.6.6.6, not-an-address",), "not-an-address"),  # as the proxy wrote it
])
def test_the_client_behind_a_trusted_proxy(peer, forwarded, client):
    assert client_address(request(peer, *forwarded), TRUSTED) == client


def test_with_no_trusted_proxies_the_peer_is_the_client():
    assert client_address(request("127.0.0.1", "198.51.100.1"), ()) == "127.0.0.1"


def test_a_network_of_proxies_and_bad_entries():
    assert client_address(request("10.1.2.3", "198.51.100.1, 10.9.9.9"),
                          networks(["10.0.0.0/8"])) == "198.51.100.1"
    with pytest.raises(ValueError):
        networks(["not a network"])
