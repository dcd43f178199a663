"""Throwaway PostgreSQL and Redis servers for the test suite.

Each server lives in its own temporary directory, listens only on 127.0.0.1 on
a free port and is torn down (process stopped, directory removed) by
``stop()``.  Leftover processes are avoided in layers:

* ``stop()`` is idempotent; every running server is also stopped by an
  ``atexit`` hook and, if SIGTERM/SIGHUP still have their default disposition,
  by a handler that stops the servers and then re-delivers the signal;
* ``redis-server`` gets PR_SET_PDEATHSIG, so it dies even if we are SIGKILLed;
* each temp dir records its owner's PID; ``start()`` first reaps servers whose
  owning process no longer exists (e.g. after SIGKILL/OOM of a test session).

PostgreSQL refuses to run as root.  When this process is root, the cluster is
created and started as the ``postgres`` OS user (created with ``useradd`` if it
does not exist) using ``subprocess``'s ``user=``/``group=`` support, so neither
``runuser`` nor ``su`` is required.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.ports import free_port
from tests.server_binaries import (
    find_pg_bin,
    find_redis_server,
    pg_bin_for_others,
    traversable_by_others,
)

__all__ = ["ThrowawayPostgres", "ThrowawayRedis", "find_pg_bin", "find_redis_server"]

PG_USER = "postgres"
_DB_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #


def _ensure_pg_user() -> pwd.struct_passwd:
    """Return the ``postgres`` account, creating it if we are root and it is missing."""
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        pass
    if os.geteuid() != 0:
        raise RuntimeError(f"OS user {PG_USER!r} does not exist and we are not root to create it")
    subprocess.run(
        [
            "useradd",
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/bin/sh",
            PG_USER,
        ],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(PG_USER)


# --------------------------------------------------------------------------- #
# cleanup: atexit, signals, stale servers from killed sessions
# --------------------------------------------------------------------------- #

_LIVE: list[ThrowawayPostgres | ThrowawayRedis] = []
_HOOKS_INSTALLED = False
_OWNER_FILE = "owner.pid"
_PG_PREFIX = "valet-pg-"
_REDIS_PREFIX = "valet-redis-"


def _stop_all() -> None:
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()


def _on_fatal_signal(signum: int, frame: object) -> None:
    _stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _track(server: ThrowawayPostgres | ThrowawayRedis) -> None:
    global _HOOKS_INSTALLED
    if server not in _LIVE:
        _LIVE.append(server)
    if _HOOKS_INSTALLED:
        return
    _HOOKS_INSTALLED = True
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _on_fatal_signal)


def _untrack(server: ThrowawayPostgres | ThrowawayRedis) -> None:
    with contextlib.suppress(ValueError):
        _LIVE.remove(server)


def _make_tmpdir(prefix: str, base: Path | None = None) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    (path / _OWNER_FILE).write_text(f"{os.getpid()}\n")
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _kill_if_named(pid: int | None, name: str, sig: int) -> None:
    if pid is None:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if name.encode() in cmdline:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def reap_stale_servers() -> None:
    """Stop servers and remove temp dirs left behind by test processes that died."""
    bases = {Path(tempfile.gettempdir()), Path("/tmp")}
    for base in bases:
        for prefix in (_PG_PREFIX, _REDIS_PREFIX):
            for tmpdir in base.glob(f"{prefix}*"):
                owner = _read_pid(tmpdir / _OWNER_FILE)
                if owner is None or _pid_alive(owner):
                    continue
                if prefix == _PG_PREFIX:
                    pid = _read_pid(tmpdir / "data" / "postmaster.pid")
                    _kill_if_named(pid, "postgres", signal.SIGQUIT)
                else:
                    _kill_if_named(_read_pid(tmpdir / "redis.pid"), "redis-server", signal.SIGKILL)
                shutil.rmtree(tmpdir, ignore_errors=True)


def _set_pdeathsig() -> None:  # runs in the child between fork and exec
    _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


try:
    import ctypes

    _LIBC: Any = ctypes.CDLL(None, use_errno=True)
    _HAVE_PRCTL = hasattr(_LIBC, "prctl") and os.uname().sysname == "Linux"
except (OSError, AttributeError):
    _HAVE_PRCTL = False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


# --------------------------------------------------------------------------- #
# PostgreSQL
# --------------------------------------------------------------------------- #


class ThrowawayPostgres:
    """A private PostgreSQL cluster in a temp dir (trust auth, fsync off, 127.0.0.1 only)."""

    def __init__(self, bindir: Path | str | None = None, *, start_timeout: int = 30) -> None:
        found = Path(bindir) if bindir is not None else find_pg_bin()
        if found is None:
            raise FileNotFoundError("PostgreSQL server binaries (initdb/pg_ctl/postgres) not found")
        self.bindir: Path = found
        self.start_timeout = start_timeout
        self.port: int | None = None
        self.tmpdir: Path | None = None
        self._run_as: dict[str, Any] = {}
        self._env: dict[str, str] = {}
        self._psql: str | None = None

    # -- public API --------------------------------------------------------- #

    @property
    def dsn(self) -> str:
        return self.dsn_for("postgres")

    def dsn_for(self, dbname: str) -> str:
        if self.port is None:
            raise RuntimeError("server is not running")
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{dbname}"

    @property
    def datadir(self) -> Path:
        assert self.tmpdir is not None
        return self.tmpdir / "data"

    @property
    def logfile(self) -> Path:
        assert self.tmpdir is not None
        return self.tmpdir / "postgres.log"

    @property
    def running(self) -> bool:
        return self.port is not None

    def start(self) -> ThrowawayPostgres:
        if self.running:
            return self
        reap_stale_servers()
        self._prepare_identity()
        base = Path(tempfile.gettempdir())
        if self._run_as and not traversable_by_others(base):
            base = Path("/tmp")  # the postgres user must be able to reach the cluster dir
        if self._run_as:
            self.bindir = pg_bin_for_others(self.bindir)  # and to run the binaries
        self.tmpdir = _make_tmpdir(_PG_PREFIX, base)
        _track(self)
        try:
            if self._run_as:
                os.chown(self.tmpdir, self._run_as["user"], self._run_as["group"])
            (self.tmpdir / "sock").mkdir()
            if self._run_as:
                os.chown(self.tmpdir / "sock", self._run_as["user"], self._run_as["group"])
            self._initdb()
            self._start_postmaster()
        except BaseException:
            self.stop()
            raise
        self._psql = shutil.which("psql", path=str(self.bindir)) or shutil.which("psql")
        return self

    def stop(self) -> None:
        if self.tmpdir is None:
            return
        if self.port is not None:
            self._pg_ctl_stop()
        self.port = None
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir = None
        _untrack(self)

    def pause(self) -> None:
        """Stop the server as an operator does (`pg_ctl stop -m fast`: clients disconnected,
        every commit on disk; connections refused from then on), keeping its data and its
        port: `resume()` brings it back where clients look for it. (Not `immediate`: this
        cluster runs with synchronous_commit off, so a crash would lose commits a client was
        told of, which a real server does not.)"""
        if self.port is None or self.tmpdir is None:
            raise RuntimeError("server is not running")
        proc = self._run([str(self.bindir / "pg_ctl"), "stop", "-D", str(self.datadir),
                          "-m", "fast", "-w", "-t", "30"], timeout=45)
        if proc.returncode != 0:
            raise RuntimeError(f"pg_ctl stop (pause) failed:\n{proc.stdout}\n{proc.stderr}")

    def resume(self) -> None:
        """Start a paused server again on the same port."""
        if self.port is None or self.tmpdir is None:
            raise RuntimeError("server was never started")
        proc = self._pg_ctl_start(self.port)
        if proc.returncode != 0:
            raise RuntimeError(f"pg_ctl start (resume) failed:\n{proc.stdout}\n{proc.stderr}\n"
                               f"--- postgres.log ---\n{_tail(self.logfile)}")

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run a utility statement (e.g. CREATE DATABASE) outside a transaction."""
        if self._psql:
            proc = subprocess.run(
                [
                    self._psql,
                    "-X",
                    "-q",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-d",
                    self.dsn_for(dbname),
                    "-c",
                    sql,
                ],
                capture_output=True,
                text=True,
                env=self._client_env(),
                timeout=60,
            )
            if proc.returncode != 0:
                raise RuntimeError(
                    f"psql failed ({proc.returncode}) for {sql!r}: {proc.stderr.strip()}"
                )
            return
        self._execute_asyncpg(sql, dbname)

    def create_database(self, name: str) -> str:
        """Create database ``name`` (letters, digits, underscore) and return its DSN."""
        self._check_name(name)
        self.execute(f'CREATE DATABASE "{name}"')
        return self.dsn_for(name)

    def drop_database(self, name: str) -> None:
        self._check_name(name)
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------- #

    @staticmethod
    def _check_name(name: str) -> None:
        if not _DB_NAME_RE.match(name):
            raise ValueError(
                f"invalid database name {name!r} (use [A-Za-z_][A-Za-z0-9_]*, max 63 chars)"
            )

    def _prepare_identity(self) -> None:
        env = dict(os.environ)
        for var in [v for v in env if v.startswith("PG")]:
            env.pop(var)  # PGDATA/PGPORT/PGHOST etc. must not leak into initdb/pg_ctl
        env["LC_ALL"] = "C"
        if os.geteuid() == 0:
            pw = _ensure_pg_user()
            self._run_as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
            env.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name)
        self._env = env

    def _client_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["PGCONNECT_TIMEOUT"] = "10"
        return env

    def _run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            capture_output=True,
            text=True,
            env=self._env,
            cwd=self.tmpdir,
            timeout=timeout,
            **self._run_as,
        )

    def _initdb(self) -> None:
        proc = self._run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.datadir),
                "-A",
                "trust",
                "-U",
                PG_USER,
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            timeout=120,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"initdb failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.tmpdir / 'sock'}'",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "logging_collector": "off",
        }
        with (self.datadir / "postgresql.conf").open("a") as conf:  # keeps postgres ownership
            conf.write("\n# throwaway test cluster\n")
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())

    def _start_postmaster(self, attempts: int = 3) -> None:
        last_error = ""
        for _ in range(attempts):
            port = free_port()
            proc = self._pg_ctl_start(port)
            if proc.returncode == 0:
                self.port = port
                return
            last_error = (
                f"{proc.stdout}\n{proc.stderr}\n--- postgres.log ---\n{_tail(self.logfile)}"
            )
            self._kill_postmaster()  # in case it half-started
        raise RuntimeError(f"pg_ctl start failed after {attempts} attempts:\n{last_error}")

    def _pg_ctl_start(self, port: int) -> subprocess.CompletedProcess[str]:
        """`pg_ctl start` of this cluster on `port`, waiting until it accepts connections."""
        return self._run(
            [str(self.bindir / "pg_ctl"), "start", "-D", str(self.datadir), "-w",
             "-t", str(self.start_timeout), "-l", str(self.logfile), "-o", f"-p {port}"],
            timeout=self.start_timeout + 15,
        )

    def _pg_ctl_stop(self) -> None:
        try:
            proc = self._run(
                [
                    str(self.bindir / "pg_ctl"),
                    "stop",
                    "-D",
                    str(self.datadir),
                    "-m",
                    "immediate",
                    "-w",
                    "-t",
                    "15",
                ],
                timeout=30,
            )
            ok = proc.returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if not ok:
            self._kill_postmaster()

    def _kill_postmaster(self) -> None:
        pidfile = self.datadir / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGQUIT)  # immediate shutdown of the postmaster and children
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)

    def _execute_asyncpg(self, sql: str, dbname: str) -> None:
        # Fallback when psql is unavailable.  Run in a fresh thread so that it
        # works even if the calling thread already has a running event loop.
        import asyncio

        import asyncpg

        errors: list[BaseException] = []

        async def run() -> None:
            conn = await asyncpg.connect(self.dsn_for(dbname), timeout=10)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        def target() -> None:
            try:
                asyncio.run(run())
            except BaseException as exc:  # re-raised in the calling thread
                errors.append(exc)

        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
        if errors:
            raise errors[0]


# --------------------------------------------------------------------------- #
# Redis
# --------------------------------------------------------------------------- #


def _redis_command(port: int, *args: str, timeout: float = 2.0) -> bytes:
    """Send one RESP command and return the raw first reply line."""
    payload = f"*{len(args)}\r\n".encode()
    for arg in args:
        data = arg.encode()
        payload += b"$%d\r\n%s\r\n" % (len(data), data)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    return reply


class ThrowawayRedis:
    """A private ``redis-server`` subprocess on 127.0.0.1 with persistence disabled."""

    def __init__(self, binary: Path | str | None = None, *, start_timeout: float = 15.0) -> None:
        found = Path(binary) if binary is not None else find_redis_server()
        if found is None:
            raise FileNotFoundError("redis-server binary not found")
        self.binary: Path = found
        self.start_timeout = start_timeout
        self.port: int | None = None
        self.tmpdir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.url_for(0)

    def url_for(self, db: int) -> str:
        if self.port is None:
            raise RuntimeError("server is not running")
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def logfile(self) -> Path:
        assert self.tmpdir is not None
        return self.tmpdir / "redis.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, attempts: int = 3) -> ThrowawayRedis:
        if self.running:
            return self
        reap_stale_servers()
        self.tmpdir = _make_tmpdir(_REDIS_PREFIX)
        _track(self)
        try:
            last_error = ""
            for _ in range(attempts):
                port = free_port()
                if self._try_start(port):
                    self.port = port
                    return self
                last_error = _tail(self.logfile)
            raise RuntimeError(
                f"redis-server failed to start after {attempts} attempts:\n{last_error}"
            )
        except BaseException:
            self.stop()
            raise

    def _try_start(self, port: int) -> bool:
        with self.logfile.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(self.binary),
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    "--dir",
                    str(self.tmpdir),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.tmpdir,
                # Only from the main thread: PDEATHSIG fires when the *thread* that forked exits.
                preexec_fn=_set_pdeathsig if self._pdeathsig_ok() else None,
            )
        (self.tmpdir / "redis.pid").write_text(f"{self.proc.pid}\n")
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:  # e.g. port already taken
                self.proc = None
                return False
            try:
                if _redis_command(port, "PING", timeout=0.5).startswith(b"+PONG"):
                    return True
            except OSError:
                pass
            time.sleep(0.02)
        self._terminate()
        return False

    @staticmethod
    def _pdeathsig_ok() -> bool:
        return _HAVE_PRCTL and threading.current_thread() is threading.main_thread()

    def command(self, *args: str) -> bytes:
        if self.port is None:
            raise RuntimeError("server is not running")
        return _redis_command(self.port, *args)

    def pause(self) -> None:
        """Stop the server as an outage does (connections refused), keeping its port:
        `resume()` starts it again there, empty (persistence is off)."""
        if self.port is None:
            raise RuntimeError("server is not running")
        self._terminate()

    def resume(self) -> None:
        """Start a paused server again on the same port."""
        if self.port is None or self.tmpdir is None:
            raise RuntimeError("server was never started")
        if not self._try_start(self.port):
            raise RuntimeError(f"redis-server did not start again:\n{_tail(self.logfile)}")

    def flushall(self) -> None:
        reply = self.command("FLUSHALL")
        if not reply.startswith(b"+OK"):
            raise RuntimeError(f"FLUSHALL failed: {reply!r}")

    def _terminate(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def stop(self) -> None:
        self._terminate()
        self.port = None
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None
        _untrack(self)

    def __enter__(self) -> ThrowawayRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
