"""Log lines: text for a person at a terminal, or JSON (`log_format: json`) for containers and
log collectors; the log file of the data directory; and reading it back (`valet logs`).

A JSON line is one object: time, level, logger, message, and the ids of the HTTP request and
of the turn it was written in (`request_id`, `turn_id`) when there is one. Secrets never reach
a line: URL credentials are masked (bot.text.redact) and so is the value of every secret variable
of the environment (tokens, keys, passwords), wherever it appears.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import logging.handlers
import os
import re
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.plumbing.private import narrow_existing, open_private, private_dir

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MASK = "***"
# The log file rolls over at this size; this many old files are kept (valet.log.1 ...).
MAX_BYTES = 10 * 1024 * 1024
BACKUPS = 3

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id",
                                                                         default=None)
turn_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("turn_id", default=None)

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|API_KEY|AUTH", re.IGNORECASE)


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for key, var in (("request_id", request_id), ("turn_id", turn_id)):
            value = var.get()
            if value:
                line[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class SecretValuesFilter(logging.Filter):
    """Masks the values of the environment's secret variables in every record."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.secrets = secret_values(os.environ if env is None else env)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        cleaned = mask(message, self.secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text, self.secrets)
        return True


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values of VALET_*/OPENAI_* variables whose names say they are secret (long enough that
    masking them cannot eat ordinary words); longest first."""
    found = {value for name, value in env.items()
             if name.startswith(("VALET_", "OPENAI_")) and not name.endswith("_FILE")
             and _SECRET_NAME.search(name) and len(value) >= 8}
    for value in list(found):
        if ":" in value:  # a Telegram token's secret half appears in URLs on its own
            found.add(value.split(":", 1)[1])
    return sorted((v for v in found if len(v) >= 8), key=len, reverse=True)


def mask(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def formatter(log_format: str) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log file created 0600 (the one after each roll-over too), whatever the
    umask: log lines can quote what people wrote."""

    def _open(self) -> Any:
        return open_private(Path(self.baseFilename), "a" if "a" in self.mode else "w",
                            encoding=self.encoding or "utf-8")


def file_handler(path: Path, log_format: str) -> logging.Handler | None:
    """The data directory's log file (rolled over at MAX_BYTES); None if it cannot be
    written (the database, which lives there too, then stops start-up with a clear line)."""
    try:
        private_dir(path.parent)
        narrow_existing(*(path.with_name(f"{path.name}.{n}") for n in range(1, BACKUPS + 1)))
        handler = PrivateRotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(formatter(log_format))
    return handler


def add_handler(handler: logging.Handler, level: str) -> None:
    from bot.plumbing.outages import OutageLog

    # An outage of the database or Redis: one line a minute per dependency, not a traceback
    # per request (bot.plumbing.outages); before the secrets filter, which formats the traceback.
    handler.addFilter(OutageLog())
    handler.addFilter(SecretValuesFilter())
    root = logging.getLogger()
    root.setLevel(level)
    root.addHandler(handler)


# --- reading it back (`valet logs`) -------------------------------------------------------


def last_lines(path: Path, count: int, until: int | None = None) -> list[str]:
    """The last `count` lines, of the first `until` bytes when given (where a follower
    starts: a line written meanwhile is the follower's, never printed twice or lost)."""
    if count <= 0 or not path.exists():
        return []
    with path.open("rb") as fh:
        data = fh.read() if until is None else fh.read(until)
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[-count:]


async def follow(path: Path, tail: Tail | None = None, poll: float = 0.2
                 ) -> AsyncIterator[str]:
    """Lines written to `path` after `tail`'s position (default: from now on); follows a
    roll-over (a new file at the path) and waits for a file that does not exist yet."""
    tail = tail or Tail(path)
    while True:
        for line in tail.read_new():
            yield line
        await asyncio.sleep(poll)


class Tail:
    """Where a follower is in a file that may roll over (plain reads: small and local)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.identity = _identity(path)
        self.position = path.stat().st_size if self.identity is not None else 0
        self.pending = b""

    def read_new(self) -> list[str]:
        current = _identity(self.path)
        if current is None:
            return []
        if current != self.identity or self.path.stat().st_size < self.position:
            self.identity, self.position, self.pending = current, 0, b""  # a new file
        with self.path.open("rb") as fh:
            fh.seek(self.position)
            chunk = fh.read()
            self.position = fh.tell()
        *complete, self.pending = (self.pending + chunk).split(b"\n")
        return [line.decode("utf-8", errors="replace") for line in complete]


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino
