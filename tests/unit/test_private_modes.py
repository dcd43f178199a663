"""bot.plumbing.private: what Valet makes is private whatever the umask; what it finds is
narrowed only when it is plainly Valet's (never /tmp, a home directory or a folder holding other
files)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from bot.plumbing.private import open_private, private_dir, private_file


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_made_private_whatever_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        made = private_dir(tmp_path / "a" / "data")
        db = private_file(made / "valet.db")
        with open_private(made / "valet.log") as fh:
            fh.write("line\n")
    finally:
        os.umask(old)
    assert _mode(made) == 0o700 and _mode(db) == 0o600 and _mode(made / "valet.log") == 0o600
    assert _mode(tmp_path / "a") == 0o775  # a parent it had to make keeps the usual mode


def test_an_existing_directory_is_narrowed_only_when_plainly_valets(tmp_path):
    valets = tmp_path / "data"
    valets.mkdir()
    (valets / "valet.db").write_text("")
    (valets / "valet.log.1").write_text("")
    os.chmod(valets, 0o755)
    private_dir(valets)
    assert _mode(valets) == 0o700

    shared = tmp_path / "shared"  # /tmp-like: sticky, everyone's
    shared.mkdir()
    os.chmod(shared, 0o1777)
    private_file(shared / "valet.db")
    assert _mode(shared) == 0o1777 and _mode(shared / "valet.db") == 0o600

    home = tmp_path / "home"  # someone's folder that also holds Valet's database
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    os.chmod(home, 0o755)
    private_file(home / "valet.db")
    assert _mode(home) == 0o755


def test_an_older_open_file_is_narrowed(tmp_path):
    old = tmp_path / "valet.db"
    old.write_text("")
    os.chmod(old, 0o644)
    private_file(old, own_dir=False)
    assert _mode(old) == 0o600
