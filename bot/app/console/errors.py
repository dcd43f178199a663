"""The last errors this process logged, for the Health page: a logging handler that keeps a
short ring of ERROR records (one line each, URL credentials masked)."""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.plumbing.outages import OutageLog
from bot.text.redact import redact_text

KEPT = 20
LINE = 300  # characters of a message shown


@dataclass(frozen=True)
class LoggedError:
    at: datetime
    level: str
    logger: str
    message: str


class RecentErrors(logging.Handler):
    def __init__(self, kept: int = KEPT) -> None:
        super().__init__(logging.ERROR)
        self.records: deque[LoggedError] = deque(maxlen=kept)
        # An outage is a warning a minute, here as in the log (bot.plumbing.outages), not an error a
        # request pushing every other error out.
        self.addFilter(OutageLog())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = " ".join(redact_text(record.getMessage()).split())
            if record.exc_info and record.exc_info[1] is not None:
                err = record.exc_info[1]
                message += f" ({type(err).__name__}: {err})"
            if len(message) > LINE:
                message = message[:LINE - 1] + "…"
            self.records.appendleft(LoggedError(
                datetime.fromtimestamp(record.created, UTC), record.levelname, record.name,
                message))
        except Exception:  # a handler never breaks the code that logs
            self.handleError(record)

    def latest(self) -> list[LoggedError]:
        return list(self.records)

    def attach(self) -> None:
        logging.getLogger().addHandler(self)

    def detach(self) -> None:
        logging.getLogger().removeHandler(self)
