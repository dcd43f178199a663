"""The order of `valet onboard`'s steps and moving between them.

Each step adds to the `Draft`; nothing is written while it runs. In a terminal:

- a step that is set up already is offered as it is ("Keep it? [Y/n]": Enter moves on);
- "skip" at any question leaves the step out (the draft as it was before the step);
- "back" starts the step again, or, at its first question, goes to the step before;
- Ctrl-C (or Ctrl-D) stops: the steps confirmed so far are written (valet.yaml and the env
  file), the one under way is not, and the next run offers them as set up.

From flags (`--yes`) the steps simply run in order; a refusal stops everything before
anything is written (OnboardStop)."""

from __future__ import annotations

import copy
from enum import Enum

from bot.setup.ask import NAVIGATION_HINT, GoBack, Interrupted, SkipStep
from bot.setup.draft import Draft
from bot.setup.onboarding import Context, Step

__all__ = ["Ending", "Step", "run_steps"]


class Ending(Enum):
    FINISHED = "finished"  # every step confirmed, kept or skipped
    INTERRUPTED = "interrupted"  # Ctrl-C: the draft holds the steps confirmed before it


async def run_steps(c: Context, steps: list[Step]) -> tuple[Ending, int]:
    """Run the steps; (how it ended, how many steps were confirmed or kept)."""
    if c.q.interactive:
        c.q.say(NAVIGATION_HINT)
    before: list[Draft] = []  # the draft before each step reached
    index, done = 0, 0
    while index < len(steps):
        step = steps[index]
        if len(before) <= index:
            before.append(copy.deepcopy(c.draft))
        c.q.say(f"\n{index + 1}. {step.title}")
        c.q.asked = 0
        try:
            await _one(c, step)
        except SkipStep:
            _restore(c, before[index])
            c.q.say("   skipped: nothing of this step changes")
        except GoBack:
            at_start = c.q.asked == 0
            _restore(c, before[index])
            del before[index:]
            if at_start and index > 0:
                index -= 1
                _restore(c, before[index])
                del before[index:]
            continue
        except Interrupted:
            _restore(c, before[index])
            return Ending.INTERRUPTED, done
        else:
            done += 1
        index += 1
    return Ending.FINISHED, done


async def _one(c: Context, step: Step) -> None:
    current = step.current(c) if c.q.interactive else None
    if current and await c.q.confirm(f"   Set up: {current}. Keep it as it is?", True):
        c.q.say("   kept")
        return
    await step.run(c)


def _restore(c: Context, draft: Draft) -> None:
    c.draft = copy.deepcopy(draft)
