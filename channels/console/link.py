"""What `valet serve` and a `valet chat` beside it share: where the server's terminal endpoint
is written (a file in the data directory, readable by its owner only: the loopback URL and the
token generated at start), and how messages travel over it (JSON over a websocket).

    chat -> {"type": "message", "id": n, "text": ..., "external_id": ...}
    serve -> {"type": "accepted", "id": n, "result": "accepted", "row": 17}
    serve -> {"type": "message", "message": {...}}   a reply or a notification to the owner
    serve -> {"type": "event", "event": {...}}       the turn's progress
    serve -> {"type": "note", "text": ...}           an approval's outcome (an edit elsewhere)
    chat -> {"type": "idle", "id": n}; serve -> {"type": "idle", "id": n}
                                                     once this terminal's messages are answered
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.contracts.envelopes import (
    EventType,
    LoopEvent,
    OutboundMessage,
    payload_of,
    prompts_of,
    stop_of,
)
from bot.plumbing.private import private_dir

ENDPOINT_FILE = "serve-terminal.json"
PATH = "/terminal"


@dataclass(frozen=True)
class Endpoint:
    url: str  # ws://127.0.0.1:PORT/terminal
    token: str
    pid: int
    # Whether that serve answers /console (console.enabled when it started); None: a file
    # written before serve said so.
    console: bool | None = None


def endpoint_file(data_dir: Path) -> Path:
    return data_dir / ENDPOINT_FILE


def write_endpoint(path: Path, endpoint: Endpoint) -> None:
    """Readable by this user only (it holds the token), replaced atomically."""
    private_dir(path.parent)
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"url": endpoint.url, "token": endpoint.token, "pid": endpoint.pid,
                   "console": endpoint.console}, fh)
    os.chmod(partial, 0o600)
    os.replace(partial, path)


def read_endpoint(path: Path) -> Endpoint | None:
    """The endpoint a running `valet serve` wrote; None when there is none (or it is not
    readable: then the chat runs on its own, as before)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        console = data.get("console")
        return Endpoint(str(data["url"]), str(data["token"]), int(data["pid"]),
                        console if isinstance(console, bool) else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_endpoint(path: Path, token: str) -> None:
    """Only the file this process wrote (a newer server may have replaced it)."""
    found = read_endpoint(path)
    if found is not None and found.token == token:
        with contextlib.suppress(OSError):
            path.unlink()


def message_json(message: OutboundMessage) -> dict[str, Any]:
    return {"id": message.id, "user_id": message.user_id, "channel": message.channel,
            "address": message.address, "text": message.text, "kind": message.kind,
            "dedupe_key": message.dedupe_key,
            "payload": payload_of(message.prompts, message.stop) or {}}


def message_of(data: dict[str, Any]) -> OutboundMessage:
    payload = data.get("payload") or {}
    return OutboundMessage(int(data["id"]), data.get("user_id"), str(data["channel"]),
                           str(data["address"]), str(data["text"]), prompts_of(payload),
                           stop_of(payload), kind=str(data.get("kind") or "reply"),
                           dedupe_key=str(data.get("dedupe_key") or ""))


def event_json(event: LoopEvent) -> dict[str, Any]:
    # Progress data is names, short texts and numbers; anything else is shown as text.
    return json.loads(json.dumps({"type": event.type.value, "data": event.data}, default=str))


def event_of(data: dict[str, Any]) -> LoopEvent:
    return LoopEvent(EventType(data["type"]), dict(data.get("data") or {}))
