"""The steps a message meets before the loop, in the one order they run, and why.

Each step in turn gets the message (Orchestrator.run_steps); the first that answers ends the
turn there, and what the others add (results, notices, context lines) is merged. The order
decides who reads a message that could be meant for several of them, which is why "cancel"
means different things (docs/architecture.md, section 3):

    1. commands    a slash command answers at once, with no LLM call. "/cancel" drops the
                   task waiting for an answer (never an approval); "/stop" here means
                   nothing was running (a running turn is stopped at the gateway's door).
    2. approvals   pending approvals read the message next: "cancel", "no", "2", a Cancel
                   button reject the approval. Before the tasks: an answer to "may I send
                   this?" must not be taken as the answer to a task's question. A decision
                   does not end the turn (the loop says its outcome), so the next step
                   still reads the same text.
    3. tasks       a task waiting for the person's answer reads it next: "cancel",
                   "never mind" (alone) cancel that task, also when step 2 just took the
                   same "cancel" as a rejection (one word settles both; the task's line is
                   the reply); an answer resumes it.
    4. recall      what Valet remembers of the person, for this request only (never answers).
    5. context     lines for the model: what waits for approval, waiting tasks, the plan, a
                   timezone question (never answer).

Before the steps, at the channels' doors: an SMS that is only "CANCEL" (or STOP...) opts the
number out and never reaches a turn; "/stop" stops a turn already running.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.contracts.turn import Step


@dataclass(frozen=True)
class TurnSteps:
    """The steps by their role; `in_order()` is the order they run in."""

    commands: Step
    approvals: Step
    tasks: Step
    recall: Step | None
    context: Sequence[Step]

    def in_order(self) -> list[Step]:
        return [self.commands, self.approvals, self.tasks,
                *([self.recall] if self.recall is not None else []), *self.context]
