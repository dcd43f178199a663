"""A real CalDAV server for the calendar tests: Radicale on a free loopback port, with a temp
storage folder and htpasswd (plain) users; and helpers that talk to it with `caldav`."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from tests.ports import free_port

USER, PASSWORD = "alice", "correct horse"


@contextlib.asynccontextmanager
async def radicale(tmp: Path) -> AsyncIterator[str]:
    """The server's base URL while the block runs."""
    users = tmp / "users"
    users.write_text(f"{USER}:{PASSWORD}\n")
    proc, port = await _start(tmp, users)
    # Radicale logs as it serves: keep reading, or a full pipe would stall it.
    drain = asyncio.create_task(_drain(proc))
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), timeout=10)
        drain.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await drain


async def _start(tmp: Path, users: Path) -> tuple[asyncio.subprocess.Process, int]:
    """Radicale listening on a free port. It takes no port 0, so it is handed one that no
    other test run is given (tests.ports); should a program outside the tests bind it first,
    Radicale cannot bind it and exits, and another port is tried. Only its own "Listening on"
    line proves the port is Radicale's (connecting could reach someone else's server)."""
    failures = []
    for _ in range(5):
        port = free_port()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "radicale", "--server-hosts", f"127.0.0.1:{port}",
            "--storage-filesystem-folder", str(tmp / "collections"),
            "--auth-type", "htpasswd", "--auth-htpasswd-filename", str(users),
            "--auth-htpasswd-encryption", "plain", "--logging-level", "info",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        assert proc.stderr is not None
        said: list[str] = []
        try:
            async with asyncio.timeout(30):  # generous: a busy machine starts Python slowly
                while line := (await proc.stderr.readline()).decode(errors="replace"):
                    said.append(line)
                    if "Listening on" in line:
                        return proc, port
        except TimeoutError:
            proc.kill()
        await proc.wait()
        failures.append("".join(said)[-300:])
    raise RuntimeError(f"radicale did not start: {failures[-1]}")


async def _drain(proc: asyncio.subprocess.Process) -> None:
    assert proc.stderr is not None
    while await proc.stderr.readline():
        pass


def make_calendar(url: str, name: str, events: list[str]) -> None:
    """A calendar with these VCALENDAR texts in it (run in a thread: caldav is blocking)."""
    import caldav

    with caldav.DAVClient(url=url, username=USER, password=PASSWORD, require_tls=False) as c:
        calendar = c.principal().make_calendar(name=name)
        for ics in events:
            calendar.add_event(ics)


def event_titles(url: str) -> list[str]:
    import caldav

    with caldav.DAVClient(url=url, username=USER, password=PASSWORD, require_tls=False) as c:
        return sorted(str(e.icalendar_component.get("SUMMARY"))
                      for cal in c.principal().calendars() for e in cal.events())
