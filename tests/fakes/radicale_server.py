"""A real CalDAV server for the calendar tests: Radicale on a free loopback port, with a temp
storage folder and htpasswd (plain) users; and helpers that talk to it with `caldav`."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

USER, PASSWORD = "alice", "correct horse"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.asynccontextmanager
async def radicale(tmp: Path) -> AsyncIterator[str]:
    """The server's base URL while the block runs."""
    users = tmp / "users"
    users.write_text(f"{USER}:{PASSWORD}\n")
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "radicale", "--server-hosts", f"127.0.0.1:{port}",
         "--storage-filesystem-folder", str(tmp / "collections"),
         "--auth-type", "htpasswd", "--auth-htpasswd-filename", str(users),
         "--auth-htpasswd-encryption", "plain", "--logging-level", "warning",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        for _ in range(200):  # up to 10 s on a busy machine
            if proc.returncode is not None:
                err = await proc.stderr.read() if proc.stderr else b""
                raise RuntimeError(f"radicale exited: {err.decode()[-500:]}")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), timeout=10)


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
