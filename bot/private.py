"""Valet's own files are private whatever the umask: the data directory (and every directory
Valet makes for its files) 0700, each file in it 0600 (the database with its -wal and -shm,
the log file and its old copies, backups, the chat history, transcripts, endpoint files).
They hold conversations, tokens and sign-in state; a shell's usual umask 022 would make them
readable by every user of the machine.

Files are created with the mode (os.open), never created first and narrowed after. A file or
directory made by an older Valet (or under another umask) is narrowed when this user owns
it; one owned by someone else is left alone (it is not Valet's to change).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Literal, TextIO

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """The directory, created (with its parents) if missing, 0700 when it is this user's."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)  # parents keep the usual modes
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=DIR_MODE)
    _narrow(path, DIR_MODE)
    return path


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
