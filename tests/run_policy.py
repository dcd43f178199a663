"""How the suite runs, wherever it runs (a pytest plugin loaded by tests/conftest.py).

* The ``servers`` marker goes on every test that starts a PostgreSQL or Redis server (it
  takes one of tests/server_fixtures.py's fixtures, or the ``postgres`` side of the storage
  fixtures): `make test-servers` runs just those, as the fresh-machine check does.
* The longest tests start first (with `--dist worksteal`, the workers end together).
* In CI (``CI=true``) a skipped test is a failure: CI installs every tool the tests use
  (tests/ci_services.sh), so a skip there means something is missing that a developer's
  machine would silently lack as well. A skip that is the same everywhere (a case that
  does not apply) says so by starting its reason with "not applicable:".
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

SERVER_FIXTURES = frozenset({"postgres_server", "postgres_dsn", "redis_server", "redis_url",
                             "own_postgres", "own_redis"})
SKIP_EVERYWHERE = "not applicable:"
# The files whose stories took longest (`make test` prints the 10 slowest tests): started
# first. Only an order: a file missing from it runs all the same.
LONGEST = frozenset({"tests/e2e/test_chaos.py", "tests/e2e/test_bench_command.py",
                     "tests/e2e/test_roles.py", "tests/e2e/test_operations.py",
                     "tests/e2e/test_outages.py", "tests/e2e/test_console_browser.py"})


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1"}


def _starts_servers(item: pytest.Item) -> bool:
    if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("db_url") == "postgres"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "servers: starts a throwaway PostgreSQL or Redis server")


def pytest_report_header() -> str:
    from tests.server_binaries import find_pg_bin, find_redis_server

    return (f"servers: PostgreSQL from {find_pg_bin() or 'nowhere'}, Redis from "
            f"{find_redis_server() or 'nowhere'} (VALET_TEST_SERVERS="
            f"{os.environ.get('VALET_TEST_SERVERS', '')!r})")


def _start_order(item: pytest.Item) -> int:
    """The longest first, so that no worker starts a long story when the others are done:
    the known longest stories, then the end-to-end ones (processes and servers), then the
    integration tests, then the rest (short: they fill the workers' last minutes)."""
    path = item.nodeid.split("::", 1)[0]
    if path in LONGEST:
        return 0
    if path.startswith("tests/e2e/"):
        return 1
    if path.startswith("tests/integration/"):
        return 2
    return 3


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _starts_servers(item):
            item.add_marker(pytest.mark.servers)
    items.sort(key=_start_order)  # stable: within each group, the order of collection


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and in_ci()) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if reason.startswith(SKIP_EVERYWHERE):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped in CI, which must run every test: {reason} [CI=true]"
