"""The ports tests hand to the servers they start in other processes (tests.ports): never one
the OS could give someone else meanwhile, never one another test run holds."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

from tests import ports
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
TAKE_TEN = ("from tests.ports import free_port; print(*(free_port() for _ in range(10)), "
            "flush=True); input()")


def test_ports_come_from_outside_the_range_the_os_picks_from() -> None:
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for port in (free_port() for _ in range(20)):
        assert not low <= port <= high


async def test_a_port_another_run_holds_is_never_given_while_it_lives() -> None:
    # Another run's worker (its own process): its ten stay its own while it lives.
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TAKE_TEN, cwd=ROOT, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE)
    assert other.stdout is not None and other.stdin is not None
    try:
        theirs = {int(p) for p in (await asyncio.wait_for(other.stdout.readline(), 60)).split()}
        ours = {free_port() for _ in range(50)}
        assert len(theirs) == 10 and len(ours) == 50
        assert not theirs & ours
        locked = [p for p in theirs if not ports._take(ports._lock_dir(), p)]
        assert sorted(locked) == sorted(theirs)
    finally:
        other.stdin.close()
        await asyncio.wait_for(other.wait(), 60)


def test_a_port_something_listens_on_is_passed_over(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", free_port()))
        listener.listen()
        port = listener.getsockname()[1]
        assert not ports._take(tmp_path, port)  # free to lock (a fresh directory), yet in use
