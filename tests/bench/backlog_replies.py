"""Answers that go ahead of a backlog, against a real `valet serve` (SQLite, the fake Telegram
and LLM; the stories of tests/e2e/test_many_at_once.py, which check that each answer went
ahead, not how fast):

  the owner's answer while 288 answers to an event burst wait for their chat's pace;
  the owner's answer while 40 every-minute reminders fall due at once;
  a stranger's pairing reply, and the owner's notice of them, while a 60-part answer goes to
      the owner.

Seconds from the message reaching the (fake) Bot API to the answer arriving there. Floor: the
owner's first answer in the event-burst run, nothing queued yet. Goal: under 5 s each (the
[hardening] issue's bound; before, these took 34 to 80 s). `--quick` runs the event burst
alone, small.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.bench.size import quick, sized
from tests.e2e.test_many_at_once import (
    event_burst,
    reminders_due,
    stranger_behind_a_long_answer,
)
from tests.fakes.fake_openai import FakeOpenAI

GOAL_SECONDS = 5.0


def _line(label: str, seconds: float) -> str:
    verdict = "ok" if seconds < GOAL_SECONDS else "OVER GOAL"
    return f"  {label:<58} {seconds:6.2f} s   goal < {GOAL_SECONDS:g} s   {verdict}"


async def run() -> list[str]:
    events = sized(288, 12)
    lines = ["backlog_replies: answers ahead of a backlog, real valet serve (SQLite)"]
    async with FakeOpenAI() as llm:
        with tempfile.TemporaryDirectory() as tmp:
            latency, behind, floor = await event_burst(llm, Path(tmp), events)
        lines.append(_line(f"owner's answer behind {events} event answers", latency))
        lines.append(f"    ({behind} of them still to go when it arrived)")
        if not quick():
            with tempfile.TemporaryDirectory() as tmp:
                latency, sent = await reminders_due(llm, Path(tmp))
            lines.append(_line("owner's answer behind 40 reminders due at once", latency))
            lines.append(f"    ({sent} reminders sent before it)")
            with tempfile.TemporaryDirectory() as tmp:
                pairing, notice, parts, _text = await stranger_behind_a_long_answer(
                    llm, Path(tmp))
            lines.append(_line("stranger's pairing reply behind a 60-part answer", pairing))
            lines.append(_line("owner's notice of the stranger, same", notice))
            lines.append(f"    ({parts} parts of the long answer sent before it)")
    lines.append(_line("floor: the owner's first answer, nothing queued", floor))
    return lines
