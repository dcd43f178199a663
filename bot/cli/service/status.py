"""`valet service status` and `valet service uninstall`.

Status says, for what is installed: each unit file, whether it is enabled and running, the
files in /etc/valet with their mode and owner, and what is wrong with them: an env file
others may read, or one that sets what a unit sets (systemd reads it over the unit's
Environment=, so the unit's value is thrown away: exactly how a set-up silently runs on the
defaults). Uninstall stops and disables the units and removes their files; the settings in
/etc/valet and the data in /var/lib/valet stay."""

from __future__ import annotations

import pwd
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from bot.cli.service.apply import SYSTEMCTL, under
from bot.cli.service.units import ALL_IN_ONE, ETC, SET_BY_UNIT, STATE, TEMPLATE, UNIT_DIR
from bot.config.env_file import EnvFileError, read_env_file

Say = Callable[[str], None]


def installed_units(root: Path) -> list[str]:
    """The unit files installed, and the template's instances enabled."""
    found = []
    unit_dir = under(root, UNIT_DIR)
    if (unit_dir / ALL_IN_ONE).exists():
        found.append(ALL_IN_ONE)
    if (unit_dir / TEMPLATE).exists():
        wants = unit_dir / "multi-user.target.wants"
        instances = sorted(p.name for p in wants.glob("valet@*.service")) if wants.is_dir() \
            else []
        found += instances or [TEMPLATE]
    return found


def status(root: Path, say: Say) -> int:
    units = installed_units(root)
    if not units:
        say(f"not installed: no Valet unit in {under(root, UNIT_DIR)} (`valet service "
            "install` installs one)")
        return 1
    problems = 0
    for unit in units:
        say(f"{unit}: {_state(unit, root)}")
    for path in sorted(under(root, ETC).glob("*")):
        say(f"{path}: {_described(path)}")
        problems += _check(path, say)
    say("all good" if not problems else f"{problems} problem(s) found")
    return 1 if problems else 0


def _state(unit: str, root: Path) -> str:
    enabled = _ask([SYSTEMCTL, *_root(root), "is-enabled", unit])
    if root != Path("/"):
        return f"{enabled} (under {root}: not running here)"
    return f"{enabled}, {_ask([SYSTEMCTL, 'is-active', unit])}"


def _ask(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return "unknown (no systemctl)"
    return done.stdout.strip() or "unknown"


def _root(root: Path) -> list[str]:
    return [] if root == Path("/") else [f"--root={root}"]


def _described(path: Path) -> str:
    st = path.stat()
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    return f"{stat.S_IMODE(st.st_mode):04o} {owner}"


def _check(path: Path, say: Say) -> int:
    if not path.name.endswith(".env"):
        return 0
    try:
        values = read_env_file(path)  # refuses a file others may read
    except EnvFileError as err:
        say(f"  FAIL  {err}")
        return 1
    found = [name for name in SET_BY_UNIT if name in values]
    if path.name != "valet.env":  # a role's file may set its own port: it is read last
        found = [name for name in found if name != "VALET_HTTP_PORT"]
    for name in found:
        empty = " (empty here: Valet then runs on its default)" if not values[name] else ""
        say(f"  FAIL  {path} sets {name}: systemd reads it over the unit's Environment= "
            f"(systemd.exec(5)), so the unit's value is thrown away{empty}; remove the line")
    return len(found)


def uninstall(root: Path, say: Say) -> int:
    units = installed_units(root)
    if not units:
        say("nothing to uninstall: no Valet unit is installed")
        return 0
    named = [u for u in units if u != TEMPLATE]
    if named:
        command = [SYSTEMCTL, *_root(root), "disable", *([] if _root(root) else ["--now"]),
                   *named]
        say("ran " + " ".join(command))
        subprocess.run(command, capture_output=True, text=True, timeout=120)
    for name in (ALL_IN_ONE, TEMPLATE):
        path = under(root, UNIT_DIR) / name
        if path.exists():
            path.unlink()
            say(f"removed {path}")
    if root == Path("/"):
        subprocess.run([SYSTEMCTL, "daemon-reload"], capture_output=True, timeout=120)
        say("ran systemctl daemon-reload")
    say(f"kept {under(root, ETC)} (settings, secrets) and {under(root, STATE)} (data): "
        "remove them yourself when you mean to")
    return 0
