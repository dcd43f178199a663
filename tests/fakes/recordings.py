"""Exchanges recorded between Valet and a real llama.cpp (or llama-cpp-python) server, played
back by the fake OpenAI server exactly as the real one answered: status, body and every
field it adds (`timings`, `system_fingerprint`, `prompt_tokens_details`), an SSE stream as it
was sent. The recordings (tests/recordings/real_llamacpp/, copied from
../shared/data/real_llamacpp/, each file saying what happened) hold `exchanges`, each with its
`request`, `status` and `response` (or `response_sse`); all twelve are copied, so the tests
need nothing beside the project.

    fake.script(recorded(exchange("tool_response_shown", 1)))

A streamed request answered from a whole recorded completion gets it as the server streams
one (a first chunk with the role, the content in word pieces, the finish reason, then the
usage and timings); a recorded stream is sent as it is.

`llamacpp_refusal` is the server's own check of a request (llama.cpp with a tool template
parses every call the history carries): a call whose arguments are not JSON is refused with
HTTP 500 before any generation, as it was in unreadable_call_breaks_llamacpp.json.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings" / "real_llamacpp"


def recording(name: str) -> dict[str, Any]:
    """One recording (`title`, `what_happened`, `server`, `exchanges`)."""
    data: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text())
    return data


def exchange(source: str | dict[str, Any], seq: int) -> dict[str, Any]:
    """Exchange `seq` of a recording, given by its name or as loaded (`recording`)."""
    record = recording(source) if isinstance(source, str) else source
    found: dict[str, Any] = next(e for e in record["exchanges"] if e["seq"] == seq)
    return found


def recorded_message(record: dict[str, Any], seq: int) -> tuple[dict[str, Any], str]:
    """The assistant message of a recorded (not streamed) answer, and its finish_reason."""
    [choice] = exchange(record, seq)["response"]["choices"]
    return choice["message"], choice["finish_reason"]


@dataclass
class Recorded:
    """One recorded answer: `status` and the body as the server sent it (`body`: a JSON
    document; `sse`: a recorded stream)."""

    status: int
    body: dict[str, Any] | None = None
    sse: str | None = None


def recorded(found: dict[str, Any]) -> Recorded:
    return Recorded(found.get("status") or 200, found.get("response"),
                    found.get("response_sse"))


def answer_of(found: dict[str, Any]) -> str:
    """The content of a recorded completion, as the server wrote it."""
    return str(found["response"]["choices"][0]["message"].get("content") or "")


async def respond(request: web.Request, body: dict[str, Any], item: Recorded
                  ) -> web.StreamResponse:
    if not body.get("stream") or item.status != 200:
        if item.sse is not None and item.status == 200:
            return web.Response(text=item.sse, content_type="text/event-stream")
        return web.json_response(item.body, status=item.status)
    text = item.sse if item.sse is not None else _as_stream(item.body or {})
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    with contextlib.suppress(ConnectionError):
        await resp.write(text.encode())
        await resp.write_eof()
    return resp


def _as_stream(completion: dict[str, Any]) -> str:
    """A whole completion as llama.cpp streams one."""
    base = {k: v for k, v in completion.items() if k not in ("choices", "usage", "timings")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"finish_reason": finish, "index": 0, "delta": delta}]}

    chunks = [chunk({"role": "assistant", "content": None})]
    content = message.get("content") or ""
    chunks += [chunk({"content": piece}) for piece in re.split(r"(?<=\s)(?=\S)", content)
               if piece]
    for i, call in enumerate(message.get("tool_calls") or ()):
        chunks.append(chunk({"tool_calls": [{"index": i, **call}]}))
    chunks.append(chunk({}, choice.get("finish_reason")))
    tail = {**base, "choices": [], "usage": completion.get("usage")}
    if "timings" in completion:
        tail["timings"] = completion["timings"]
    chunks.append(tail)
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


LLAMACPP_BAD_ARGUMENTS = (
    "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse "
    "error at line 1, column 2: syntax error while parsing value - invalid literal; last "
    "read: 'to'")


def llamacpp_refusal(body: dict[str, Any]) -> web.Response | None:
    """llama.cpp's answer to a history holding a call whose arguments are not JSON (HTTP
    500 in 2 ms, recorded); None when every call's arguments parse."""
    for message in body.get("messages") or ():
        for call in (message.get("tool_calls") or ()) if isinstance(message, dict) else ():
            arguments = (call.get("function") or {}).get("arguments")
            try:
                json.loads(arguments) if isinstance(arguments, str) else None
            except ValueError:
                return web.json_response({"error": {
                    "code": 500, "message": LLAMACPP_BAD_ARGUMENTS,
                    "type": "server_error"}}, status=500)
    return None
