"""Ports for the servers a test starts in another process (`valet serve`, PostgreSQL, Redis,
Dovecot, Radicale), which cannot be handed a listening socket: a port nobody else on the
machine will be given while the test runs.

A port the OS picked (bind to port 0), released and handed to a child process could be given
to someone else in the seconds before the child bound it: the OS hands out the same
ephemeral range (/proc/sys/net/ipv4/ip_local_port_range) to every port-0 bind and every
outgoing connection on the machine, and a whole suite beside another makes thousands of those
(a `valet serve` once exited with "address already in use" that way). These ports come from
below that range, where the OS never picks by itself, and each is locked (an flock on a file
in one directory every test run on this machine shares) for as long as the process that took
it lives, so two runs, or two workers of one, never take the same port. A port something else
already listens on is passed over (it is bound once to check)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import socket
import tempfile
from pathlib import Path

__all__ = ["free_port"]

_LOWEST = 15000  # above the well-known and most registered servers' ports
_SHARED = Path(tempfile.gettempdir()) / "valet-test-ports"
_held: list[int] = []  # the lock files' descriptors, open (locked) until the process exits
_next: int | None = None


def free_port() -> int:
    """A loopback TCP port that no other test, test run or OS pick will be given while this
    process lives, and that nobody listens on now."""
    global _next
    first, last = _candidates()
    span = last - first + 1
    if _next is None:  # workers and runs start apart: fewer locks tried in vain
        _next = (os.getpid() * 7919) % span
    locks = _lock_dir()
    for _ in range(span):
        port = first + _next % span
        _next += 1
        if _take(locks, port):
            return port
    raise RuntimeError(f"no free port left in {first}-{last} (locks in {locks})")


@functools.cache  # read once per process
def _candidates() -> tuple[int, int]:
    """The ports below the OS's ephemeral range (or above it, if it starts too low)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    if low - _LOWEST >= 2000:
        return _LOWEST, low - 1
    if 65535 - high >= 2000:
        return high + 1, 65535
    raise RuntimeError(f"the ephemeral port range {low}-{high} leaves no ports for test servers")


@functools.cache  # made once per process
def _lock_dir() -> Path:
    """The directory every run shares (sticky and open to all, like /tmp itself); a user who
    cannot write there gets their own."""
    with contextlib.suppress(FileExistsError):
        _SHARED.mkdir()
        with contextlib.suppress(PermissionError):
            _SHARED.chmod(0o1777)
    if os.access(_SHARED, os.W_OK | os.X_OK):
        return _SHARED
    own = _SHARED.with_name(f"{_SHARED.name}-{os.getuid()}")
    own.mkdir(exist_ok=True)
    return own


def _take(locks: Path, port: int) -> bool:
    try:
        fd = os.open(locks / str(port), os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's lock file that they made private: theirs
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o666)  # the umask may have narrowed it: other users lock it too
    if not _unused(port):
        os.close(fd)  # not kept: something outside the tests listens there
        return False
    _held.append(fd)
    return True


def _unused(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
