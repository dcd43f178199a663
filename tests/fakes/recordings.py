"""The exchanges recorded between Valet and a real model on a real server
(../shared/data/real_llamacpp, see its README), for the fake server to answer as the real one
did."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.telegram_spec import reference_data


def recording(name: str) -> dict[str, Any] | None:
    """One recording (`title`, `what_happened`, `server`, `exchanges`), if the reference data
    is beside the project."""
    path = reference_data(f"real_llamacpp/{name}.json")
    return json.loads(path.read_text()) if path is not None else None


def exchange(record: dict[str, Any], seq: int) -> dict[str, Any]:
    return next(e for e in record["exchanges"] if e["seq"] == seq)


def recorded_message(record: dict[str, Any], seq: int) -> tuple[dict[str, Any], str]:
    """The assistant message of a recorded (not streamed) answer, and its finish_reason."""
    [choice] = exchange(record, seq)["response"]["choices"]
    return choice["message"], choice["finish_reason"]
