"""`valet service install` orders Valet after the Postgres and Redis of this machine it uses
(bot.cli.service.local, units): `After=` and `Wants=` name them when the URLs point here
(localhost, a loopback address, a Unix socket), never a server elsewhere."""

from __future__ import annotations

import re

import pytest

from bot.cli.service import units
from bot.cli.service.local import local_servers
from bot.config import Settings

BOTH = ("postgresql.service", "redis-server.service")


@pytest.mark.parametrize(("database", "redis", "expected"), [
    ("sqlite:////var/lib/valet/valet.db", None, ()),
    ("postgresql://valet:pw@localhost/valet", None, ("postgresql.service",)),
    ("postgresql://valet:pw@127.0.0.1:5432/valet", "redis://127.0.0.1:6379/0", BOTH),
    ("postgresql://valet:pw@[::1]/valet", "redis://localhost/0", BOTH),
    ("postgresql://valet@localhost/valet", "unix:///run/redis/redis.sock", BOTH),
    ("postgresql://valet@/valet?host=/var/run/postgresql", None, ("postgresql.service",)),
    ("postgresql://valet:pw@db.example/valet", "redis://redis.example:6379/0", ()),
    ("postgresql://valet:pw@10.0.0.5/valet", "redis://localhost:6379/0",
     ("redis-server.service",)),
])
def test_only_servers_on_this_machine_are_waited_for(database, redis, expected):
    assert local_servers(Settings(database_url=database, redis_url=redis)) == expected


def _ordering(unit: str) -> dict[str, str]:
    return dict(re.findall(r"^(After|Wants)=(.*)$", unit, re.MULTILINE))


def test_the_units_start_after_the_local_servers_and_pull_them_in():
    local = units.UnitSettings(local_servers=BOTH)
    for unit in (units.all_in_one(local), units.template(local)):
        assert _ordering(unit) == {
            "After": "network-online.target postgresql.service redis-server.service",
            "Wants": "network-online.target postgresql.service redis-server.service"}
    remote = units.UnitSettings(local_servers=())
    for unit in (units.all_in_one(remote), units.template(remote)):
        assert _ordering(unit) == {"After": "network-online.target",
                                   "Wants": "network-online.target"}


def test_the_shipped_units_are_the_usual_set_ups():
    """deploy/valet.service: all in one on SQLite (nothing to wait for); deploy/valet@.service:
    the roles on a Postgres and a Redis of this machine."""
    assert _ordering(units.all_in_one(units.UnitSettings()))["Wants"] == \
        "network-online.target"
    assert _ordering(units.template(units.UnitSettings()))["Wants"] == \
        "network-online.target postgresql.service redis-server.service"
