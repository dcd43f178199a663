"""Thought traces: what a turn did, step by step, so the owner can see why without reading
JSONL files (`/debug`, `valet turns show`).

The loop appends one entry per event as it happens (an LLM call with its model, tokens,
latency and any reasoning text the model returned; a tool call with its arguments and result;
a message that arrived mid-turn; a switch to a fallback model; a sub-task); the orchestrator
puts the capability router's choice first and its misses last (bot.tools.capability_router) and
wraps them in a `TurnTrace` with how the turn ended (bot.turn.trace_store keeps the last ones).
Long texts are shortened when recorded, and again when shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bot.llm.port import LLMResponse, ToolCall
from bot.llm.quirks import DESCRIBED
from bot.tools.registry import ToolOutcome

Entry = dict[str, Any]

# What an entry keeps (characters): enough to see what happened, never a whole page.
KEPT_TEXT = 1_000
KEPT_REASONING = 4_000
SHOWN = 240  # what a line of /debug shows of a long text


def shorten(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def llm_entry(step: int, model: str, response: LLMResponse, *, latency_ms: int,
              tools_offered: int, replayed: bool = False) -> Entry:
    return {"kind": "llm", "step": step, "model": model,
            "input_tokens": response.usage.input_tokens,
            # of them, those the server read from its prompt cache (llama.cpp's cache_n,
            # OpenAI's cached_tokens): a stable prompt keeps this near input_tokens
            "cached_tokens": response.usage.cached_input_tokens,
            "output_tokens": response.usage.output_tokens, "latency_ms": latency_ms,
            "finish": response.finish_reason,
            "tools_offered": tools_offered, "replayed": replayed,
            "reasoning": shorten(response.reasoning, KEPT_REASONING),
            "text": shorten(response.content, KEPT_TEXT),
            "calls": [c.name for c in response.tool_calls],
            "read": [DESCRIBED.get(q, q) for q in response.quirks]}


def failed_entry(step: int, model: str, err: Exception, latency_ms: int) -> Entry:
    """An LLM call that ended the turn: after how long (every attempt, retries included) and
    the server's words."""
    return {"kind": "llm_failed", "step": step, "model": model, "latency_ms": latency_ms,
            "error": shorten(str(err), SHOWN)}


def tool_entry(step: int, call: ToolCall, outcome: ToolOutcome) -> Entry:
    return {"kind": "tool", "step": step, "name": call.name,
            "arguments": shorten(call.arguments, KEPT_TEXT), "status": outcome.status.value,
            "latency_ms": outcome.duration_ms, "result": shorten(outcome.content, KEPT_TEXT)}


def steered_entry(step: int, text: str) -> Entry:
    return {"kind": "steered", "step": step, "text": shorten(text, KEPT_TEXT)}


def switch_entry(step: int, from_model: str, to_model: str, reason: str) -> Entry:
    return {"kind": "switch", "step": step, "from": from_model, "to": to_model,
            "reason": shorten(reason, SHOWN)}


@dataclass(frozen=True)
class TurnTrace:
    """One turn, as /debug shows it."""

    turn_id: str
    user_id: str
    channel: str
    at: str  # ISO time the turn was stored
    said: str  # the person's message (shortened)
    stop: str
    mode: str = ""
    duration_ms: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    entries: list[Entry] = field(default_factory=list)
    error: str = ""  # the LLM could not be used: why

    def to_json(self) -> str:
        # Its fields as they are (entries are plain dicts): asdict's deep copy cost more than
        # the encoding, once per turn.
        return json.dumps(vars(self), ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, text: str) -> TurnTrace:
        data = json.loads(text)
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


def render(trace: TurnTrace, *, width: int = SHOWN) -> str:
    """The trace as plain lines: a header, then one numbered line (or two) per event."""
    head = (f"Turn {trace.turn_id} ({trace.channel}, {trace.at[:16].replace('T', ' ')}): "
            f"“{shorten(trace.said, 80)}”\n"
            f"mode {trace.mode or '?'}, stopped: {trace.stop}, {trace.duration_ms / 1000:.1f} s, "
            f"{trace.input_tokens} tokens in{_from_cache(trace.entries)} / "
            f"{trace.output_tokens} out")
    lines = [head]
    for n, entry in enumerate(trace.entries, 1):
        lines += [f"{n}. {line}" if i == 0 else f"   {line}"
                  for i, line in enumerate(_entry_lines(entry, width))]
    if trace.error:
        lines.append(f"LLM error: {shorten(trace.error, width)}")
    return "\n".join(lines)


def _from_cache(entries: list[Entry]) -> str:
    """How much of the turn's prompts the server read from its cache, when it said."""
    cached = sum(e.get("cached_tokens") or 0 for e in entries if e.get("kind") == "llm")
    return f" ({cached} from the server's prompt cache)" if cached else ""


def _entry_lines(entry: Entry, width: int) -> list[str]:
    kind = entry.get("kind")
    if kind == "llm":
        said = (f"asked for {', '.join(entry['calls'])}" if entry.get("calls")
                else f"answered “{shorten(entry.get('text'), width)}”")
        cached = f" ({entry['cached_tokens']} from the cache)" \
            if entry.get("cached_tokens") else ""
        cut = " (cut at the length cap)" if entry.get("finish") == "length" else ""
        lines = [f"LLM {entry.get('model')}: {entry.get('input_tokens')} in{cached} / "
                 f"{entry.get('output_tokens')} out{cut}, {entry.get('latency_ms')} ms, "
                 f"{entry.get('tools_offered')} tools offered"
                 f"{' (from the journal)' if entry.get('replayed') else ''}; {said}"]
        if entry.get("read"):
            lines.append(f"read: {'; '.join(entry['read'])}")
        if entry.get("reasoning"):
            lines.append(f"thinking: {shorten(entry['reasoning'], width)}")
        return lines
    if kind == "llm_failed":
        return [f"LLM {entry.get('model')}: no answer after {entry.get('latency_ms', 0) / 1000:.1f}"
                f" s (retries included): {entry.get('error')}"]
    if kind == "tool":
        return [f"tool {entry.get('name')}({shorten(entry.get('arguments'), width // 2)}) -> "
                f"{entry.get('status')}, {entry.get('latency_ms')} ms: "
                f"{shorten(entry.get('result'), width)}"]
    if kind == "steered":
        return [f"the person added mid-turn: “{shorten(entry.get('text'), width)}”"]
    if kind == "switch":
        return [f"switched model {entry.get('from')} -> {entry.get('to')}: {entry.get('reason')}"]
    if kind == "subtask":
        lines = [f"sub-task “{shorten(entry.get('task'), 80)}” (tools: "
                 f"{', '.join(entry.get('tools') or [])}): {entry.get('stop')}, "
                 f"{entry.get('input_tokens')} in / {entry.get('output_tokens')} out"]
        lines += [f"  - {line}" for sub in entry.get("entries") or []
                  for line in _entry_lines(sub, width)]
        return lines
    if kind == "approval":
        return [f"approval asked: {shorten(entry.get('summary'), width)}"]
    if kind == "joined":
        return [f"result joined from earlier: {entry.get('name')} -> "
                f"{shorten(entry.get('result'), width)}"]
    if kind == "route":
        where = "the last turn" if entry.get("read") == "last turn" else "the message"
        if entry.get("unsure"):
            return [f"router: unsure ({where} names {', '.join(entry['unsure'])}): opened "
                    "nothing"]
        named = "; ".join(f"{c} (“{'”, “'.join(words)}”)"
                          for c, words in (entry.get("opened") or {}).items())
        return [f"router opened {named}, from {where}"]
    if kind == "route_miss":
        return [f"router missed: {', '.join(entry.get('capabilities') or [])} (the model "
                "opened it itself)"]
    if kind == "compaction":
        return [f"older messages summarised: {entry.get('detail')}"]
    return [shorten(json.dumps(entry, default=str), width)]
