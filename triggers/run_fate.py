"""What became of a run's message, told from the stores that know (a run recorded as
"delivered" must have been sent).

A reminder's run queues its message itself (outcome `sent`: queued, under the run's message
key). A run handed to the person's queue (outcome `submitted`) becomes a turn: an inbox row
under the run's message key, whose reply is queued as `reply:<row id>`. `settle_submitted`
records the end of those once it is known (the turn failed; its reply sent, failed or never
needed), with a compare-and-set on `submitted`, so a run's recorded outcome does not stay
"submitted" after its reply went out; the scheduler's leader calls it at each heartbeat and
readers (the console, `valet tasks run-now`) before they look. `message_fate` is one run's
message as the outbox has it, for `valet tasks run-now` to say what really happened."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from bot.db import Database, Row
from triggers.model import RunKey, RunOutcome

SUBMITTED = RunOutcome.SUBMITTED.value
# Runs handed to queues, the turn that took each (its inbox row under the run's message key)
# and that turn's reply in the outbox.
_SUBMITTED_RUNS = (
    "SELECT r.task_id, r.run_key, i.id AS row_id, i.status AS row_status, i.error AS row_error,"
    " o.status AS sent_status, o.last_error AS sent_error"
    " FROM trigger_runs r"
    " LEFT JOIN inbox i ON i.channel = 'trigger'"
    " AND i.external_id = 'task:' || r.task_id || ':' || r.run_key"
    " LEFT JOIN outbox o ON o.dedupe_key = 'reply:' || i.id"
    " WHERE r.outcome = $1 AND ($2 = '' OR r.task_id = $2)")


class MessageState(Enum):
    WAITING = "waiting"  # the turn has not answered yet (in the queue, or running)
    QUEUED = "queued"  # in the outbox, not sent yet (or being sent)
    SENT = "sent"  # the channel took it
    FAILED = "failed"  # given up, refused, or cut off: detail says which
    NONE = "none"  # nothing to send (nothing to report, or no channel reached the person)


@dataclass(frozen=True)
class MessageFate:
    state: MessageState
    detail: str = ""


_FINAL = {MessageState.SENT: RunOutcome.SENT, MessageState.FAILED: RunOutcome.FAILED,
          MessageState.NONE: RunOutcome.NOTHING}


async def settle_submitted(db: Database, task_id: str = "") -> int:
    """Record what became of every submitted run whose end is known (of one task, or all);
    how many changed."""
    changed = 0
    for row in await db.fetch(_SUBMITTED_RUNS, SUBMITTED, task_id):
        fate = _turn_fate(row)
        outcome = _FINAL.get(fate.state)
        if outcome is None:
            continue
        changed += await db.execute(
            "UPDATE trigger_runs SET outcome = $3, detail = $4 WHERE task_id = $1"
            " AND run_key = $2 AND outcome = $5", row["task_id"], row["run_key"],
            outcome.value, fate.detail or None, SUBMITTED)
    return changed


async def message_fate(db: Database, task_id: str, run_key: str) -> MessageFate:
    """The run's message: a reminder's own, or the reply of the turn it became."""
    key = str(RunKey(task_id, run_key))
    row = await db.fetchrow(
        "SELECT i.id AS row_id, i.status AS row_status, i.error AS row_error,"
        " o.status AS sent_status, o.last_error AS sent_error FROM inbox i"
        " LEFT JOIN outbox o ON o.dedupe_key = 'reply:' || i.id"
        " WHERE i.channel = 'trigger' AND i.external_id = $1", key)
    if row is not None:
        return _turn_fate(row)
    own = await db.fetchrow("SELECT status AS sent_status, last_error AS sent_error FROM outbox"
                            " WHERE dedupe_key = $1", key)
    return _sent_fate(own) if own is not None else MessageFate(MessageState.NONE)


def _turn_fate(row: Row) -> MessageFate:
    if row.get("row_id") is None or row["row_status"] in ("received", "processing"):
        return MessageFate(MessageState.WAITING)
    if row["row_status"] == "failed":
        return MessageFate(MessageState.FAILED, f"the turn failed: {row['row_error'] or ''}")
    if row["row_status"] == "rejected":
        return MessageFate(MessageState.FAILED, "the turn was refused (a rate limit, or the "
                                                "person is blocked)")
    if row.get("sent_status") is None:
        return MessageFate(MessageState.NONE, "the turn sent nothing (nothing to say, or no "
                                              "channel reached the person)")
    return _sent_fate(row)


def _sent_fate(row: Row) -> MessageFate:
    status = row["sent_status"]
    if status == "sent":
        return MessageFate(MessageState.SENT)
    if status == "dead":
        return MessageFate(MessageState.FAILED, str(row.get("sent_error") or "not sent"))
    return MessageFate(MessageState.QUEUED)
