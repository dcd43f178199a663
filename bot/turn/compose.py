"""compose_turn: the one place the stored turn and the reply are built, from the values the
turn's steps and the loop returned. Nothing here touches a store.

Stored, in order: what was said before the person's message was answered (notices), their
message, results that joined the turn late (a decided approval, a finished task), the loop's
messages, what a step says after the answer (a reminder of what waits), and the last word
(the answer, the questions asked, the approvals listed for the LLM to read on later turns).
Every call keeps exactly one result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.approvals.listing import pending_lines
from bot.contracts.approvals import ApprovalRequest
from bot.contracts.envelopes import TurnStop
from bot.contracts.turn import Answered, ComposedTurn, StepResult, TurnContext
from bot.loop.types import ReactLoopResult, Spent
from bot.turn.media import stored_user_message

Message = dict[str, Any]


@dataclass(frozen=True)
class LLMFailure:
    """The loop could not run to an answer because the LLM could not be used."""

    line: str  # what the person reads (the persona's words for what went wrong)
    error: str  # for the log and the transcript
    said_mid_turn: tuple[str, ...] = ()  # messages the person added while the turn ran
    spent: Spent | None = None  # what the turn had spent when it failed (for /debug)


@dataclass(frozen=True)
class Waits:
    """What the turn leaves waiting for the person, made durable before the reply."""

    prompts: tuple[ApprovalRequest, ...] = ()  # approvals to decide, in the order shown
    questions: tuple[str, ...] = ()  # questions of tasks that paused for an answer
    notices: tuple[str, ...] = ()  # what the pool did to make room


def listed(intro: str, prompts: tuple[ApprovalRequest, ...]) -> str:
    """The approvals as the LLM reads them in the history (channels render their own)."""
    return "\n".join([intro, *pending_lines(prompts)])


def compose_turn(ctx: TurnContext, before: StepResult, run: ReactLoopResult | LLMFailure | None,
                 waits: Waits, *, approval_intro: str) -> ComposedTurn:
    stored: list[Message] = []
    if before.notices:  # said before the person's message is answered: stored in that place
        stored.append({"role": "assistant", "content": "\n\n".join(before.notices)})
    stored.append(stored_user_message(ctx.msg))  # a photo's bytes are never stored
    for late in before.joined:
        stored.extend(late.messages())
    text, stop, last_word = _outcome(before, run, waits)
    if isinstance(run, ReactLoopResult):
        stored.extend(run.new_messages)
    elif isinstance(run, LLMFailure):  # their words stay for the next turn, like the first
        stored.extend({"role": "user", "content": said} for said in run.said_mid_turn)
    if before.after:  # after the answer, before any new approval's card
        after = "\n\n".join(before.after)
        text = "\n\n".join(t for t in (text, after) if t)
        if isinstance(before, Answered):
            last_word = "\n\n".join(t for t in (last_word, after) if t)
        elif isinstance(run, ReactLoopResult):
            stored.append({"role": "assistant", "content": after})
    if waits.prompts:
        last_word = "\n\n".join(t for t in (last_word, listed(approval_intro,
                                                                waits.prompts)) if t)
        text = "\n\n".join(t for t in (text, approval_intro) if t)
    if last_word:
        stored.append({"role": "assistant", "content": last_word})
    reply = "\n\n".join([*before.notices, text]) if text else "\n\n".join(before.notices)
    return ComposedTurn(stored, reply, waits.prompts, stop, before.settled)


def _outcome(before: StepResult, run: ReactLoopResult | LLMFailure | None, waits: Waits
             ) -> tuple[str, TurnStop, str]:
    """(the reply's text, how the turn ended, the assistant message still to be stored)."""
    if isinstance(before, Answered):
        return before.text, before.stop, before.text
    if isinstance(run, LLMFailure):
        return run.line, TurnStop.LLM_ERROR, ""  # the message stays for the next turn
    assert run is not None
    if waits.questions or waits.notices:  # tasks paused: the reply is their questions
        said = "\n\n".join([*waits.notices, *waits.questions])
        return said, run.stop_reason, said
    if waits.prompts and run.stop_reason is TurnStop.WAITING_FOR_USER:
        return "", run.stop_reason, ""  # only approvals wait: the prompt says it all
    # The loop stored its own last word (the final answer, or why it stopped).
    return run.response, run.stop_reason, ""
