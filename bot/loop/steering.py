"""Steering: a message the person sends while their turn runs joins that turn before its next
LLM call, as a user message, in order, once (seed 002, the injection queue).

The gateway owns where such messages come from (bot.gateway.midturn: the running turn's
mailbox, fed from the inbox); the loop sees only `Steering`. Before each LLM call the loop
takes what arrived, records it in the turn's journal (so a turn redone after a crash adds the
same messages at the same point, and never runs them as turns of their own), has their inbox
rows closed as part of this turn, and appends them to the conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.contracts.steering import Steered, Steering
from bot.loop.traces import steered_entry
from bot.loop.types import REACT

if TYPE_CHECKING:
    from bot.loop.state import LoopRun


async def steer(run: LoopRun, steering: Steering | None) -> bool:
    """Before the next LLM call: the messages added mid-turn join the conversation (on a
    redo, those the journal recorded for this call). True when any did."""
    step = run.llm_step + 1  # the call they come before
    recorded = run.journal.steered(step)
    if recorded is not None:
        items = [Steered.from_json(i) for i in recorded]
    elif steering is not None and (items := steering.take()):
        await run.journal.steer(step, [i.to_json() for i in items])
    else:
        return False
    if steering is not None:
        await steering.consumed(items)
    for item in items:
        run.append({"role": "user", "content": item.text})
        run.trace.append(steered_entry(step, item.text))
    run.mode = REACT  # what they ask may need the tools
    return True
