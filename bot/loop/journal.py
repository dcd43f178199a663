"""The turn journal: every LLM response and tool call of a turn, durable as it happens, keyed
by the turn id (the gateway's "inbox-17").

A turn redone after a crash or a retry continues from its journal: the n-th LLM call reuses
the n-th recorded response (no request), a recorded tool result is reused (never re-run), and
a call that started without a recorded result runs again only if its tool is safe to repeat;
otherwise it gets an "interrupted, outcome unknown" result, so the LLM can check or ask.
The journal, not the LLM, decides what already happened.

Besides `llm:<step>` (with the model that gave it), `start:`/`result:` and `step:<key>`, a
turn records `steer:<step>`: the messages the person added mid-turn before that LLM call
(bot.loop.steering). A sub-task's steps are a journal of their own, `<turn id>/<call id>`
(bot.loop.subtasks), finished and closed with its turn's.

Entries are written once (the first write wins), so a redone turn cannot rewrite its past.
`finish` deletes a turn's entries once the turn is stored in the history; `close` marks a
stopped turn (/stop) so that it is never replayed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

from bot.contracts.approvals import ApprovalDraft
from bot.contracts.clock import Clock
from bot.contracts.pause import PausedTask
from bot.db import Database, Queries
from bot.db.turn_reads import journal_is_empty, journal_written
from bot.llm.port import LLMResponse, TokenUsage, ToolCall
from bot.tools.registry import Tool, ToolOutcome, ToolStatus

log = logging.getLogger(__name__)

INTERRUPTED = ("Interrupted: this call started before a restart and its outcome is unknown; "
               "check before trying again.")
_CLOSED = "closed"
# A turn's entries and its sub-tasks' (bot.loop.subtasks: `<turn id>/<call id>`).
_DELETE_TURN = ("DELETE FROM turn_journal WHERE turn_id = $1"
                " OR substr(turn_id, 1, $2) = $3")


# --- JSON forms -----------------------------------------------------------------------------


def response_to_json(response: LLMResponse) -> dict[str, Any]:
    return {"content": response.content,
            "tool_calls": [[c.id, c.name, c.arguments] for c in response.tool_calls],
            "usage": [response.usage.input_tokens, response.usage.output_tokens],
            "finish_reason": response.finish_reason, "reasoning": response.reasoning,
            "quirks": list(response.quirks), "requests": response.requests}


def response_from_json(data: dict[str, Any]) -> LLMResponse:
    calls = [ToolCall(str(i), str(n), str(a)) for i, n, a in data.get("tool_calls") or []]
    usage = TokenUsage(*(int(x) for x in data.get("usage") or (0, 0)))
    return LLMResponse(data.get("content"), calls, usage, data.get("finish_reason"),
                       data.get("reasoning"), tuple(str(q) for q in data.get("quirks") or ()),
                       int(data.get("requests") or 1))


def pause_to_json(pause: Any) -> dict[str, Any] | None:
    """A paused call's `pause` (a waiting task or an approval draft, or several of them: a
    sub-task's) as JSON data."""
    if pause is None:
        return None
    if isinstance(pause, tuple):
        return {"kind": "several", "data": [pause_to_json(p) for p in pause]}
    if isinstance(pause, PausedTask):
        data = asdict(pause)
        for name in ("created_at", "asked_at", "expires_at"):
            data[name] = data[name].isoformat() if data[name] else None
        return {"kind": "paused_task", "data": data}
    if isinstance(pause, ApprovalDraft):
        return {"kind": "approval_draft", "data": asdict(pause)}
    raise TypeError(f"cannot journal a pause of type {type(pause).__name__}")


def pause_from_json(data: dict[str, Any] | None) -> Any:
    if data is None:
        return None
    if data["kind"] == "several":
        return tuple(pause_from_json(p) for p in data["data"])
    body = dict(data["data"])
    if data["kind"] == "paused_task":
        for name in ("created_at", "asked_at", "expires_at"):
            body[name] = datetime.fromisoformat(body[name]) if body.get(name) else None
        return PausedTask(**_known(PausedTask, body))
    if data["kind"] == "approval_draft":
        return ApprovalDraft(**_known(ApprovalDraft, body))
    raise ValueError(f"unknown pause kind {data['kind']!r} in the journal")


def _known(cls: type, body: dict[str, Any]) -> dict[str, Any]:
    """Only the fields the class has now (an entry written by an older version may hold
    more)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in body.items() if k in names}


def outcome_to_json(outcome: ToolOutcome) -> dict[str, Any]:
    return {"call_id": outcome.call_id, "name": outcome.name, "status": outcome.status.value,
            "content": outcome.content, "duration_ms": outcome.duration_ms,
            "synthetic": outcome.synthetic, "truncated_from": outcome.truncated_from,
            "pause": pause_to_json(outcome.pause), "result_status": outcome.result_status,
            "usage": [outcome.usage.input_tokens, outcome.usage.output_tokens]
            if outcome.usage else None, "trace": outcome.trace}


def outcome_from_json(data: dict[str, Any]) -> ToolOutcome:
    return ToolOutcome(
        call_id=data["call_id"], name=data["name"], status=ToolStatus(data["status"]),
        content=data["content"], duration_ms=int(data.get("duration_ms") or 0),
        synthetic=bool(data.get("synthetic")), truncated_from=data.get("truncated_from"),
        pause=pause_from_json(data.get("pause")), result_status=data.get("result_status"),
        usage=TokenUsage(*(int(x) for x in data["usage"])) if data.get("usage") else None,
        trace=data.get("trace"))


# --- what a journal holds -------------------------------------------------------------------


@dataclass
class JournalReplay:
    """Everything a turn's journal recorded, read once when the turn (re)starts."""

    closed: bool = False
    close_reason: str = ""
    responses: dict[int, tuple[LLMResponse, int]] = field(default_factory=dict)
    models: dict[int, int] = field(default_factory=dict)  # step -> which model answered
    started: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    results: dict[tuple[int, str], ToolOutcome] = field(default_factory=dict)
    records: dict[str, Any] = field(default_factory=dict)
    # step -> the messages the person added mid-turn before that LLM call (bot.loop.steering)
    steered: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.closed or self.responses or self.started or self.results
                    or self.records or self.steered)

    def response(self, step: int) -> tuple[LLMResponse, int] | None:
        """The step-th LLM response (1-based) and the recovery level it was made at."""
        return self.responses.get(step)

    def result(self, step: int, call_id: str) -> ToolOutcome | None:
        return self.results.get((step, call_id))

    def was_started(self, step: int, call_id: str) -> bool:
        return (step, call_id) in self.started

    def record(self, key: str) -> Any:
        return self.records.get(key)


class TurnJournal:
    """The journal's storage (SQLite or Postgres, table `turn_journal`)."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock

    async def load(self, turn_id: str) -> JournalReplay:
        if journal_is_empty(turn_id):  # a turn's first run: nothing recorded yet
            return JournalReplay()
        rows = await self.db.fetch(
            "SELECT entry_key, body FROM turn_journal WHERE turn_id = $1", turn_id)
        replay = JournalReplay()
        for row in rows:
            _read_entry(replay, row["entry_key"], json.loads(row["body"]))
        return replay

    async def llm_response(self, turn_id: str, step: int, response: LLMResponse,
                           level: int = 0, model: int = 0) -> None:
        await self._write(turn_id, f"llm:{step}", {"response": response_to_json(response),
                                                   "level": level, "model": model})

    async def tool_started(self, turn_id: str, step: int, call: ToolCall) -> None:
        await self._write(turn_id, f"start:{step}:{call.id}",
                          {"name": call.name, "arguments": call.arguments})

    async def tool_result(self, turn_id: str, step: int, outcome: ToolOutcome) -> None:
        await self._write(turn_id, f"result:{step}:{outcome.call_id}",
                          outcome_to_json(outcome))

    async def steer(self, turn_id: str, step: int, items: list[dict[str, Any]]) -> None:
        await self._write(turn_id, f"steer:{step}", items)

    async def record(self, turn_id: str, key: str, value: Any) -> bool:
        """An orchestrator step's own entry (JSON data); False if `key` was recorded before
        (the first record stands)."""
        return await self._write(turn_id, f"step:{key}", value)

    async def recorded(self, turn_id: str, key: str) -> Any:
        """What `record` stored under `key`, or None."""
        if journal_is_empty(turn_id):
            return None
        body = await self.db.fetchval(
            "SELECT body FROM turn_journal WHERE turn_id = $1 AND entry_key = $2",
            turn_id, f"step:{key}")
        return json.loads(body) if body is not None else None

    async def open_turns(self) -> list[tuple[str, datetime]]:
        """Turns with a journal (running, or cut short by a crash), oldest first: (turn id,
        when its first entry was written)."""
        rows = await self.db.fetch(
            "SELECT turn_id, MIN(created_at) AS started FROM turn_journal"
            " GROUP BY turn_id ORDER BY MIN(created_at)")
        return [(r["turn_id"], r["started"]) for r in rows]

    async def close(self, turn_id: str, reason: str) -> None:
        """The turn was stopped: forget what it did (and its sub-tasks) and never replay it."""
        journal_written(turn_id)
        async with self.db.transaction() as tx:
            await tx.execute(_DELETE_TURN, turn_id, len(turn_id) + 1, f"{turn_id}/")
            await tx.execute(
                "INSERT INTO turn_journal (turn_id, entry_key, body, created_at)"
                " VALUES ($1, $2, $3, $4)", turn_id, _CLOSED,
                json.dumps({"reason": reason}), self.clock.now())

    async def finish(self, turn_id: str, q: Queries | None = None) -> None:
        """The turn is stored in the history: its journal (and its sub-tasks', keyed
        `<turn id>/<call id>`) is no longer needed. `q`: the transaction (or batch) that
        stores the turn."""
        if journal_is_empty(turn_id):  # a first run that journalled nothing
            return
        await (q or self.db).execute(_DELETE_TURN, turn_id, len(turn_id) + 1, f"{turn_id}/")

    async def _write(self, turn_id: str, key: str, value: Any) -> bool:
        journal_written(turn_id)  # before the write: a crash may leave it half done
        body = json.dumps(value, ensure_ascii=False, default=str)
        written = await self.db.execute(
            "INSERT INTO turn_journal (turn_id, entry_key, body, created_at)"
            " VALUES ($1, $2, $3, $4) ON CONFLICT (turn_id, entry_key) DO NOTHING",
            turn_id, key, body, self.clock.now())
        return written == 1


def _read_entry(replay: JournalReplay, key: str, body: Any) -> None:
    kind, _, rest = key.partition(":")
    if key == _CLOSED:
        replay.closed, replay.close_reason = True, str(body.get("reason") or "")
    elif kind == "llm":
        replay.responses[int(rest)] = (response_from_json(body["response"]),
                                       int(body.get("level") or 0))
        replay.models[int(rest)] = int(body.get("model") or 0)
    elif kind in ("start", "result"):
        step, _, call_id = rest.partition(":")
        if kind == "start":
            replay.started[(int(step), call_id)] = body
        else:
            replay.results[(int(step), call_id)] = outcome_from_json(body)
    elif kind == "step":
        replay.records[rest] = body
    elif kind == "steer":
        replay.steered[int(rest)] = list(body)
    else:
        log.warning("ignoring unknown journal entry %r", key)


# --- the loop's side: replay first, record as it goes ---------------------------------------


class TurnRecorder:
    """One turn's journal as the loop uses it. Without a journal (or a turn id) every method
    is a no-op and nothing is replayed."""

    def __init__(self, journal: TurnJournal | None = None, turn_id: str | None = None,
                 replay: JournalReplay | None = None) -> None:
        self.journal = journal if turn_id else None
        self.turn_id = turn_id or ""
        self.replay = replay or JournalReplay()

    @classmethod
    async def open(cls, journal: TurnJournal | None, turn_id: str | None) -> TurnRecorder:
        if journal is None or not turn_id:
            return cls()
        replay = await journal.load(turn_id)
        if not replay.empty:
            log.info("turn %s continues from its journal (%d responses, %d results)",
                     turn_id, len(replay.responses), len(replay.results))
        return cls(journal, turn_id, replay)

    @property
    def closed(self) -> bool:
        return self.replay.closed

    def response(self, step: int) -> tuple[LLMResponse, int] | None:
        return self.replay.response(step)

    def model(self, step: int) -> int:
        """Which model gave the step-th response (0: the first)."""
        return self.replay.models.get(step, 0)

    async def responded(self, step: int, response: LLMResponse, level: int,
                        model: int = 0) -> None:
        # A final answer (no tool call) is not journalled: nothing was done on its say-so, and
        # the stored turn follows it (a crash in between asks the model again). A plain turn
        # writes no journal at all, and finishes none.
        if self.journal is not None and response.tool_calls:
            await self.journal.llm_response(self.turn_id, step, response, level, model)

    def known_outcome(self, step: int, call: ToolCall, tool: Tool | None) -> ToolOutcome | None:
        """What this call already came to in an earlier run of the turn, or None when it is
        to run now (never run, or cut short but safe to repeat)."""
        recorded = self.replay.result(step, call.id)
        if recorded is not None:
            return recorded
        if self.replay.was_started(step, call.id) and not (tool and tool.safe_to_repeat):
            return ToolOutcome(call.id, call.name, ToolStatus.INTERRUPTED, INTERRUPTED,
                               synthetic=True)
        return None

    def steered(self, step: int) -> list[dict[str, Any]] | None:
        """What the person added before the step-th LLM call in an earlier run; None: none
        was recorded there."""
        return self.replay.steered.get(step)

    async def steer(self, step: int, items: list[dict[str, Any]]) -> None:
        if self.journal is not None:
            await self.journal.steer(self.turn_id, step, items)

    def is_recorded(self, step: int, call_id: str) -> bool:
        return self.replay.result(step, call_id) is not None

    async def starting(self, step: int, call: ToolCall) -> None:
        if self.journal is not None:
            await self.journal.tool_started(self.turn_id, step, call)

    async def finished(self, step: int, outcome: ToolOutcome) -> None:
        if self.journal is not None and not self.is_recorded(step, outcome.call_id):
            await self.journal.tool_result(self.turn_id, step, outcome)
