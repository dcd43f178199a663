"""Doing what `valet service` planned, saying each thing as it is done: files written
atomically with their mode and owner, the service user created when missing, the migrations
applied for roles, the units enabled and started (`systemctl`), and the reverse.

`root` is "/" for this machine. Another directory (`--root`, as `systemctl --root`) is an
image or a chroot being prepared: every path is under it, the units are enabled there with
`systemctl --root`, and nothing is started (no systemd runs it)."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from bot.cli.service.plan import File, Plan
from bot.cli.service.units import ETC, STATE
from bot.config import ConfigError
from bot.config.env_file import read_env_file
from bot.db.sqlite import file_of
from bot.plumbing.logs import mask
from bot.text.redact import redact_text
from channels.registry import load_channel_settings

Say = Callable[[str], None]
SYSTEMCTL = "systemctl"


def under(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def show(plan: Plan, root: Path, say: Say) -> None:
    """--dry-run: every file as it would be written (secret values shown as ***), then the
    commands."""
    say("valet service install --dry-run: nothing is changed (secret values shown as ***).")
    for note in plan.notes:
        say(f"note: {note}")
    say("It would write:")
    for file in plan.files:
        say(f"\n==> {under(root, file.path)} ({file.mode:04o} {file.owner}:{file.group}) <==")
        say(mask(redact_text(file.text), list(file.secret_values)).rstrip("\n"))
    say("\nand run:")
    if _missing(plan.user):
        say("  " + " ".join(_useradd(plan.user)))
    if plan.migrate:
        say("  valet migrate  (the roles never migrate the database themselves)")
    for command in _commands(plan, root):
        say("  " + " ".join(command))


def install(plan: Plan, root: Path, say: Say, migrate: Callable[[], Sequence[str]]) -> int:
    """0 when every unit runs (or, under another root, is enabled); 1 when one does not."""
    for note in plan.notes:
        say(f"note: {note}")
    _user(plan.user, root, say)
    uid, gid = _ids(plan.user)
    etc = under(root, ETC)
    etc.mkdir(parents=True, exist_ok=True)
    os.chown(etc, 0, gid)  # root's; the service's group may read valet.yaml in it
    os.chmod(etc, 0o750)
    for file in plan.files:
        try:
            write(under(root, file.path), file, uid, gid)
        except OSError as err:
            raise ConfigError(f"{under(root, file.path)}: cannot write: "
                              f"{err.strerror or err}") from None
        say(f"wrote {under(root, file.path)} ({file.mode:04o} {file.owner}:{file.group})")
    preflight(plan, root)
    if plan.migrate:
        applied = migrate()
        say(f"applied {len(applied)} migration(s)" if applied else "the database's schema "
            "is up to date")
    for command in _commands(plan, root):
        _run(command, say)
    if root != Path("/"):
        say(f"not started: {root} is not this machine's root (enabled for its next boot)")
        return 0
    return report_running(plan.units, say)


def preflight(plan: Plan, root: Path) -> None:
    """The settings as the unit will give them to Valet (its Environment=, then valet.env
    over it), read from the files just written, before anything is enabled: a mistake is
    one line each now, not a unit that fails to start."""
    unit = next(f for f in plan.files if f.path.endswith(".service"))
    env = {name: value.replace(ETC, str(under(root, ETC))).replace(STATE,
                                                                  str(under(root, STATE)))
           for name, value in re.findall(r"^Environment=(\w+)=(.*)$", unit.text, re.M)}
    env.update(read_env_file(under(root, f"{ETC}/valet.env")))
    try:
        settings = load_channel_settings(env["VALET_CONFIG"], env=env)
        database = settings.database_url
        state = under(root, STATE)
        if database.startswith("sqlite") and state not in Path(file_of(database)).parents:
            raise ConfigError(f"the database would be {file_of(database)}, but the service "
                              f"may write only in {STATE}: remove database_url from "
                              "valet.yaml (the service keeps valet.db there)")
    except ConfigError as err:
        lines = "; ".join(err.lines)
        raise ConfigError(f"the files are written but Valet would refuse them: {lines}; "
                          "fix that and run `valet service install` again (nothing was "
                          "enabled or started)") from None


def write(path: Path, file: File, uid: int, gid: int) -> None:
    """Replaced atomically, created with its mode (never readable by others in between)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(file.text)
    os.chown(partial, 0 if file.owner == "root" else uid, 0 if file.group == "root" else gid)
    os.chmod(partial, file.mode)
    os.replace(partial, path)


def _commands(plan: Plan, root: Path) -> list[list[str]]:
    if root != Path("/"):
        return [[SYSTEMCTL, f"--root={root}", "enable", *plan.units]]
    return [[SYSTEMCTL, "daemon-reload"], [SYSTEMCTL, "enable", "--now", *plan.units]]


def _run(command: list[str], say: Say) -> None:
    say("ran " + " ".join(command))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise ConfigError(f"{command[0]} not found: this machine does not run systemd "
                          "(--dry-run prints the files to install by hand)") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ConfigError(f"{' '.join(command)} failed: {said[-1] if said else done.returncode}")


def report_running(unit_names: list[str], say: Say) -> int:
    failed = []
    for unit in unit_names:
        state = subprocess.run([SYSTEMCTL, "is-active", unit], capture_output=True,
                               text=True, timeout=30).stdout.strip() or "unknown"
        say(f"{unit}: {state}")
        if state not in ("active", "activating"):
            failed.append(unit)
    for unit in failed:
        say(f"{unit} is not running: `journalctl -u {unit} -n 50` says why")
    return 1 if failed else 0


def _user(user: str, root: Path, say: Say) -> None:
    """The service user, created (a system user, no shell, home in the state directory)
    when this machine has none."""
    if not _missing(user):
        return
    if root != Path("/"):
        raise ConfigError(f"no user {user!r} on this machine: create it (useradd --system) "
                          "or give --user")
    _run(_useradd(user), say)


def _missing(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return True
    return False


def _useradd(user: str) -> list[str]:
    return ["useradd", "--system", "--home-dir", STATE, "--shell", "/usr/sbin/nologin",
            "--user-group", user]


def _ids(user: str) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid
