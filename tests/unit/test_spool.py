"""The webhook spool (bot.plumbing.spool): durable before the webhook is answered, private on disk,
moved oldest first once it can be stored, each entry once, and nothing dropped."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.db import DatabaseUnavailable
from bot.plumbing.outages import DependencyDown
from bot.plumbing.spool import Spool, store_or_keep


class Store:
    """What a channel's replayer does: store once per id (the inbox's dedupe), or fail as
    told."""

    def __init__(self) -> None:
        self.rows: dict[str, datetime] = {}
        self.order: list[str] = []
        self.failing: BaseException | None = None

    async def replay(self, payload: Mapping[str, Any], at: datetime) -> None:
        if self.failing is not None:
            raise self.failing
        if payload["id"] not in self.rows:
            self.rows[payload["id"]] = at
            self.order.append(payload["id"])


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


async def test_kept_entries_are_private_and_moved_oldest_first_with_their_time(
        tmp_path, umask_022):
    spool, store = Spool(tmp_path / "spool"), Store()
    spool.replays("sms.inbound", store.replay)
    at = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    for n in range(5):
        await spool.put("sms.inbound", {"id": f"SM{n}"}, at)
    directory = tmp_path / "spool"
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    files = sorted(directory.iterdir())
    assert len(files) == 5 and {oct(f.stat().st_mode & 0o777) for f in files} == {"0o600"}
    assert spool.waiting("sms.inbound") and not spool.waiting("events")

    assert await spool.move_all() == 5
    assert store.order == [f"SM{n}" for n in range(5)]
    assert set(store.rows.values()) == {at}  # stored with the time the webhook came
    assert spool.count() == 0 and not spool.waiting("sms.inbound")


async def test_while_the_database_is_away_entries_wait_then_each_is_stored_once(tmp_path):
    spool, store = Spool(tmp_path), Store()
    spool.replays("sms.inbound", store.replay)
    await spool.put("sms.inbound", {"id": "SM1"})
    kept = next(tmp_path.glob("*.json"))
    copy = tmp_path / "copy"
    shutil.copy(kept, copy)
    store.failing = DatabaseUnavailable("the Postgres server cannot be reached")
    assert await spool.move_all() is None  # still away: it waits
    assert spool.count() == 1 and store.rows == {}

    store.failing = None
    assert await spool.move_all() == 1
    # A crash between storing and removing it: the entry comes again; stored once all the same.
    shutil.copy(copy, kept)
    assert await spool.move_all() == 1
    assert store.order == ["SM1"]


async def test_a_kind_that_cannot_be_stored_yet_holds_only_its_own_kind(tmp_path):
    spool, sms, telegram = Spool(tmp_path), Store(), Store()
    spool.replays("sms.inbound", sms.replay)
    spool.replays("telegram.update", telegram.replay)
    telegram.failing = DependencyDown("telegram", "not started")
    await spool.put("telegram.update", {"id": "u1"})
    await spool.put("sms.inbound", {"id": "SM1"})
    await spool.put("telegram.update", {"id": "u2"})
    await spool.put("sms.inbound", {"id": "SM2"})
    assert await spool.move_all() is None
    assert sms.order == ["SM1", "SM2"] and telegram.order == []
    assert spool.waiting("telegram.update") and not spool.waiting("sms.inbound")
    telegram.failing = None
    assert await spool.move_all() == 2
    assert telegram.order == ["u1", "u2"]


async def test_an_entry_that_keeps_failing_is_put_aside_never_dropped(tmp_path, caplog):
    spool, store = Spool(tmp_path, tries=3), Store()
    spool.replays("events", store.replay)
    store.failing = ValueError("a bug")
    await spool.put("events", {"id": "e1"})
    assert await spool.move_all() is None
    assert await spool.move_all() is None
    assert await spool.move_all() == 0  # the third failure puts it aside: not stored
    assert spool.count() == 0 and spool.put_aside == 1 and spool.moved == 0
    assert [p.name.endswith(".events.json") for p in (tmp_path / "failed").iterdir()] == [True]
    assert any("put aside" in r.getMessage() and "not stored" in r.getMessage()
               and r.levelname == "ERROR" for r in caplog.records)
    assert not any("kept message(s) stored" in r.getMessage() for r in caplog.records)


async def test_store_or_keep_stores_now_or_keeps_while_the_database_is_away(tmp_path):
    spool, store = Spool(tmp_path), Store()
    spool.replays("sms.inbound", store.replay)
    now = datetime.now(UTC)

    async def stored(payload: dict[str, Any]) -> None:
        await store.replay(payload, now)

    assert await store_or_keep(spool, "sms.inbound", {"id": "a"}, now,
                               lambda: stored({"id": "a"})) is False
    store.failing = DatabaseUnavailable("away")
    assert await store_or_keep(spool, "sms.inbound", {"id": "b"}, now,
                               lambda: stored({"id": "b"})) is True
    store.failing = None
    # Entries wait: the next one goes behind them, even with the database back.
    assert await store_or_keep(spool, "sms.inbound", {"id": "c"}, now,
                               lambda: stored({"id": "c"})) is True
    assert store.order == ["a"]
    assert await spool.move_all() == 2
    assert store.order == ["a", "b", "c"]
    # Another failure is the caller's: no spool hides a bug.
    store.failing = KeyError("bug")
    with pytest.raises(KeyError):
        await store_or_keep(spool, "sms.inbound", {"id": "d"}, now,
                            lambda: stored({"id": "d"}))


async def test_a_kind_nobody_replays_is_refused_before_anything_is_written(tmp_path):
    spool = Spool(tmp_path)
    with pytest.raises(ValueError):
        await spool.put("sms.inbound", {"id": "x"})
    assert not Path(tmp_path).joinpath("failed").exists() and spool.count() == 0


async def test_a_corrupt_entry_is_put_aside_and_said_so_never_told_as_stored(tmp_path, caplog):
    spool, store = Spool(tmp_path), Store()
    spool.replays("sms.inbound", store.replay)
    await spool.put("sms.inbound", {"id": "a"})
    broken = await spool.put("sms.inbound", {"id": "b"})
    await spool.put("sms.inbound", {"id": "c"})
    broken.write_text("{ not json")  # a disk that failed under it
    caplog.set_level("INFO", logger="bot.plumbing.spool")

    assert await spool.move_all() == 2
    assert store.order == ["a", "c"] and spool.moved == 2 and spool.put_aside == 1
    assert [p.name for p in (tmp_path / "failed").iterdir()] == [broken.name]
    said = [r.getMessage() for r in caplog.records]
    assert any(broken.name in m and "put aside" in m and "unreadable" in m for m in said), said
    assert "spool: 2 kept message(s) stored" in said
    assert any(m.startswith("spool: 1 kept message(s) put aside") for m in said), said


# Run in a child process: RLIMIT_FSIZE is the whole process's, and pytest's own capture
# files would hit it too. Python ignores SIGXFSZ, so a write past it fails with EFBIG, as a
# full disk fails one with ENOSPC.
_FULL_DISK_CHILD = """
import asyncio, resource, sys
from pathlib import Path
from bot.plumbing.spool import Spool, SpoolUnwritable

async def main():
    spool = Spool(Path(sys.argv[1]))
    async def replay(payload, at):
        pass
    spool.replays("sms.inbound", replay)
    await spool.put("sms.inbound", {"id": "fits"})
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, resource.RLIM_INFINITY))
    try:
        await spool.put("sms.inbound", {"id": "x" * 4096})
    except SpoolUnwritable as err:
        print(err.status, err.why.split(":")[0])
    else:
        print("kept")

asyncio.run(main())
"""


def test_a_write_the_disk_refuses_leaves_no_temporary_file_and_is_a_503(tmp_path):
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", _FULL_DISK_CHILD, str(tmp_path / "spool")],
                           capture_output=True, text=True, timeout=60,
                           cwd=Path(__file__).resolve().parents[2])
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["503", "sms.inbound"], child.stdout + child.stderr
    assert "Traceback" not in child.stderr
    assert "could not be kept" in child.stderr and "answered 503" in child.stderr
    names = sorted(p.name for p in (tmp_path / "spool").iterdir())
    assert len(names) == 1 and names[0].endswith(".sms.inbound.json"), names  # no .tmp


async def test_entries_an_earlier_run_left_hold_their_kind_before_the_mover_starts(tmp_path):
    earlier = Spool(tmp_path)
    earlier.replays("sms.inbound", Store().replay)
    await earlier.put("sms.inbound", {"id": "from-before-the-crash"})

    spool, store = Spool(tmp_path), Store()  # the next start: its mover not started yet
    spool.replays("sms.inbound", store.replay)
    now = datetime.now(UTC)
    assert spool.waiting("sms.inbound") and not spool.waiting("events")
    assert await store_or_keep(spool, "sms.inbound", {"id": "new"}, now,
                               lambda: store.replay({"id": "new"}, now)) is True
    assert await spool.move_all() == 2
    assert store.order == ["from-before-the-crash", "new"]
