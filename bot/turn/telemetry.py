"""Turn transcripts (JSONL, one line per turn) for debugging and cost attribution."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.loop.types import ReactLoopResult
from bot.plumbing.private import open_private, private_dir

log = logging.getLogger(__name__)


def turn_record(turn_id: str, user_id: str, channel: str, at: datetime,
                result: ReactLoopResult) -> dict[str, Any]:
    return {
        "turn_id": turn_id, "user_id": user_id, "channel": channel, "at": at.isoformat(),
        "stop_reason": result.stop_reason.value, "mode": result.mode, "turns": result.turns,
        "duration_ms": result.duration_ms,
        "usage": {"input": result.token_usage.input_tokens,
                  "output": result.token_usage.output_tokens},
        "tool_calls": [asdict(r) for r in result.tool_calls],
        "diagnostics": result.diagnostics,
        "trace": result.trace,
    }


class TranscriptWriter:
    """Appends turn records to `<dir>/transcript-YYYY-MM-DD.jsonl`; None dir: logs only."""

    def __init__(self, directory: str | None) -> None:
        self.directory = Path(directory) if directory else None
        if self.directory:
            private_dir(self.directory)
        # Whether a record is worth building at all (a turn's hot path asks before it does):
        # a directory to write to, or debug logging on when the writer was made.
        self.wanted = self.directory is not None or log.isEnabledFor(logging.DEBUG)

    def write(self, record: dict[str, Any]) -> None:
        log.debug("turn %s", record)
        if not self.directory:
            return
        path = self.directory / f"transcript-{record['at'][:10]}.jsonl"
        try:
            with open_private(path) as fh:  # every turn, tools and all: 0600
                fh.write(json.dumps(record, default=str) + "\n")
        except OSError as err:
            log.warning("cannot write transcript %s: %s", path, err)
