"""Valet's own files are private whatever the umask: the data directory (and every directory
Valet makes for its files) 0700, each file in it 0600 (the database with its -wal and -shm,
the log file and its old copies, backups, the chat history, transcripts, endpoint files).
They hold conversations, tokens and sign-in state; a shell's usual umask 022 would make them
readable by every user of the machine.

Files are created with the mode (os.open), never created first and narrowed after. A file
made by an older Valet (or under another umask) is narrowed when this user owns it. An
existing directory is narrowed only when it is plainly Valet's: this user's, not shared by
design (the sticky bit of /tmp), and holding nothing but Valet's own files (VALET_FILES); a
database put in /tmp or in a home directory never changes that directory's mode.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path
from typing import Literal, TextIO

DIR_MODE = 0o700
FILE_MODE = 0o600


# What Valet keeps in its data directory (a directory holding only these is Valet's).
VALET_FILES = re.compile(
    r"valet\.db(-wal|-shm|-journal|\.owner\.lock)?|valet\.log(\.\d+)?|serve-terminal\.json"
    r"|chat_history|telegram-poller-\w+\.lock|mcp-.+\.log|transcript-[\d-]+\.jsonl"
    r"|.+\.partial|spool.*")


def private_dir(path: Path) -> Path:
    """The directory, created 0700 (its missing parents with the usual modes) if missing;
    narrowed to 0700 when it exists and is plainly Valet's."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:
            return path
        os.chmod(path, DIR_MODE)  # exactly 0700, whatever the umask left
        return path
    if _valets(path):
        _narrow(path, DIR_MODE)
    return path


def _valets(path: Path) -> bool:
    try:
        st = path.stat()
        names = os.listdir(path)
    except OSError:
        return False
    if st.st_mode & stat.S_ISVTX or path == path.parent:  # /tmp and the like; the root
        return False
    return all(VALET_FILES.fullmatch(name) for name in names)


def private_file(path: Path, *, own_dir: bool = True) -> Path:
    """The file, created empty 0600 if missing, else narrowed to 0600 when it is this user's;
    its directory made private too unless `own_dir` is False (a backup's directory is the
    operator's). Creating it first is what makes SQLite's -wal and -shm private: SQLite gives
    them the database file's mode."""
    if own_dir:
        private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    _narrow(path, FILE_MODE)
    return path


def open_private(path: Path, mode: Literal["a", "w"] = "a", encoding: str = "utf-8"
                 ) -> TextIO:
    """`open(path, mode)` for a text file created 0600 ("a" appends, "w" replaces)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    private_dir(path.parent)
    fd = os.open(path, flags, FILE_MODE)
    _narrow(path, FILE_MODE)
    return os.fdopen(fd, mode, encoding=encoding)


def narrow_existing(*paths: Path) -> None:
    """These files (those that exist) to 0600 when they are this user's."""
    for path in paths:
        _narrow(path, FILE_MODE)


def _narrow(path: Path, mode: int) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & ~mode == 0:
        return
    with contextlib.suppress(PermissionError):
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
