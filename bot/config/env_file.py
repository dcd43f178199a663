"""The env file: `KEY=value` lines that `valet` puts into its own environment at start, before
the settings are read (`--env-file PATH`, by default `valet.env` beside the valet.yaml in use).
`valet onboard` writes it, readable by its owner only (0600).

Values already in the environment win, and a variable given as a file there (`VALET_X_FILE`,
bot.config.secret_files) wins over the same variable in the env file, so a deployment can
override any line without editing it. A file every user may read is refused (it holds
secrets). The default file, when this user may not read it, is someone else's: systemd reads
/etc/valet/valet.env as root (EnvironmentFile=) before it starts Valet as `valet`, so the
variables are already in the environment. Nothing here prints or logs a value: problems name
the file, the line and the key only.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from bot.config.problems import Problem

ENV_FILE_NAME = "valet.env"
FILE_SUFFIX = "_FILE"
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
_PLAIN = re.compile(r"^[A-Za-z0-9_\-:./+=,@%]*$")


class EnvFileError(Exception):
    """The env file cannot be used; one line saying why (never a value)."""


def default_env_file(config: Path) -> Path:
    """`valet.env` beside the valet.yaml in use (which may not exist yet)."""
    return config.parent / ENV_FILE_NAME


def read_env_file(path: Path) -> dict[str, str]:
    """The file's variables, in order. EnvFileError for a line that is not `KEY=value` or a
    file others may read."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise EnvFileError(f"{path}: cannot read: {err.strerror or err}") from err
    if mode & stat.S_IRWXO:
        raise EnvFileError(f"{path}: other users may read it (mode {stat.S_IMODE(mode):04o}) "
                           f"and it holds secrets: run `chmod 600 {path}`")
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            key = line.split("=", 1)[0].strip()[:40] if "=" in line else "?"
            raise EnvFileError(str(Problem(f"{path}:{number}", key,
                                           "not a KEY=value line")))
        values[match.group(1)] = _unquoted(match.group(2))
    return values


def load_env_file(path: Path, env: MutableMapping[str, str], *, required: bool) -> list[str]:
    """Put the file's variables into `env`, except those the environment already gives
    (itself, or as `NAME_FILE`). Returns the names set. A missing file is fine unless
    `required` (asked for by --env-file)."""
    if not path.exists():
        if required:
            raise EnvFileError(f"{path}: env file not found")
        return []
    if not required and not os.access(path, os.R_OK):
        return []  # another user's (systemd's EnvironmentFile, read as root)
    loaded = []
    for key, value in read_env_file(path).items():
        if _given(key, env):
            continue
        env[key] = value
        loaded.append(key)
    return loaded


def _given(key: str, env: Mapping[str, str]) -> bool:
    base = key.removesuffix(FILE_SUFFIX)
    return bool(env.get(key) or env.get(base) or env.get(base + FILE_SUFFIX))


def write_env_file(path: Path, values: Mapping[str, str | None]) -> None:
    """Set (or, with None, remove) these variables in the file, keeping its other lines and
    comments; created 0600, replaced atomically (a crash leaves the old file or the new)."""
    lines: list[str] = []
    if path.exists():
        lines = path.read_text(encoding="utf-8").splitlines()
    pending = dict(values)
    out: list[str] = []
    for line in lines:
        match = _LINE.match(line)
        if match is None or match.group(1) not in pending:
            out.append(line)
            continue
        value = pending.pop(match.group(1))
        if value is not None:
            out.append(f"{match.group(1)}={_quoted(value)}")
    if not lines:
        out.append("# Valet's secrets and settings (valet onboard); loaded by `valet` at start.")
    out += [f"{key}={_quoted(value)}" for key, value in pending.items() if value is not None]
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")
    os.chmod(partial, 0o600)  # also when the .partial existed with another mode
    os.replace(partial, path)


def _quoted(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError("an env file value cannot span lines")
    if _PLAIN.match(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquoted(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return re.sub(r"\\(.)", r"\1", raw[1:-1])
    return raw.split(" #", 1)[0].rstrip()  # an unquoted value may end with a comment
