"""Commands an operator runs on a deployment: `valet migrate`, `valet backup PATH`,
`valet logs [--follow]`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
from pathlib import Path
from typing import Any

from bot.app.database import MIGRATIONS, open_database
from bot.config import ConfigError, Settings
from bot.db.migrate import apply_migrations, refuse_newer, schema_state
from bot.db.sqlite import file_of
from bot.plumbing.private import private_file
from bot.text.redact import redact_url


def add_ops_commands(sub: Any) -> None:
    sub.add_parser("migrate", help="apply the database migrations this release needs "
                                   "(safe to repeat; prints what it applied)")
    backup = sub.add_parser("backup", help="copy the SQLite database, safely while Valet runs "
                                           "(Postgres: use pg_dump)")
    backup.add_argument("path", help="the file to write (must not exist yet)")
    logs = sub.add_parser("logs", help="print the log file of the data directory")
    logs.add_argument("-f", "--follow", action="store_true",
                      help="keep printing lines as they are written (Ctrl-C stops)")
    logs.add_argument("-n", "--lines", type=int, default=50,
                      help="how many of the last lines to print first (default 50)")


async def run_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """Apply pending migrations and say which; a second run applies nothing."""
    db = await open_database(settings.database_url, migrate=False)
    try:
        where = redact_url(settings.database_url)
        refuse_newer(await schema_state(db, MIGRATIONS), where, MIGRATIONS)
        applied = await apply_migrations(db, MIGRATIONS)
        state = await schema_state(db, MIGRATIONS)
    finally:
        await db.close()
    for name in applied:
        print(f"applied {name}")
    verb = f"applied {len(applied)} migration(s)" if applied else "nothing to apply"
    print(f"{verb}: {where} is at schema version {state.version}")
    return 0


async def run_backup(settings: Settings, args: argparse.Namespace) -> int:
    """SQLite's online backup: a consistent copy while `valet serve` keeps writing."""
    url = settings.database_url
    if not url.startswith("sqlite:"):
        raise ConfigError("valet backup copies SQLite databases; for Postgres use pg_dump "
                          "(docs/going-live.md, Backups)")
    source, target = file_of(url), Path(args.path)
    size, version = await asyncio.to_thread(_backup, source, target)
    print(f"backed up {source} to {target} ({size / 1e6:.1f} MB, schema version {version})")
    return 0


def _backup(source: str, target: Path) -> tuple[int, int]:
    if source == ":memory:" or not Path(source).is_file():
        raise ConfigError(f"no database at {source}: nothing to back up")
    if target.exists():
        raise ConfigError(f"{target} already exists: give a new file name")
    if not target.parent.is_dir():
        raise ConfigError(f"{target.parent} is not a directory")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    private_file(partial, own_dir=False)  # a copy of every conversation: 0600, any umask
    src = sqlite3.connect(source)
    try:
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)  # one step: a snapshot as of one moment, whatever writes meanwhile
            check = dst.execute("PRAGMA quick_check").fetchone()[0]
            version = dst.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
                                  ).fetchone()[0]
        finally:
            dst.close()
    finally:
        src.close()
    if check != "ok":
        partial.unlink(missing_ok=True)
        raise ConfigError(f"the copy failed its check ({check}); {source} was not changed")
    os.replace(partial, target)
    return target.stat().st_size, int(version)


async def run_logs(settings: Settings, args: argparse.Namespace) -> int:
    from bot.plumbing.logs import Tail, follow, last_lines

    path = settings.log_file()
    if not args.follow and not await asyncio.to_thread(path.exists):
        raise ConfigError(f"no log file at {path} yet (valet serve and valet chat write it; "
                          "a process of some roles logs to its output only: journalctl -u "
                          "valet@web, docker compose logs web)")
    tail = Tail(path)  # where following starts: the last lines are read up to here
    for line in await asyncio.to_thread(last_lines, path, max(args.lines, 0), tail.position):
        print(line, flush=True)
    if args.follow:
        async for line in follow(path, tail):
            print(line, flush=True)
    return 0
