"""What changes from turn to turn or minute to minute (the person's current time, the steps'
context lines: memory recalled, what waits, the plan) goes with the newest message, after the
history, never into the system prompt that heads every request: a server's prompt cache then
reuses the system prompt, the tools and the whole history, and reads only the new messages.

The note follows the person's words in their message (the same words begin it in the next
turn's history, so the shared prefix runs through them), marked as Valet's, not theirs. Only
the request carries it: the history keeps the person's words alone (bot.turn.media)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Message = dict[str, Any]

NOTE_HEAD = "[Valet's note for this turn, not written by the person]"


def note_text(lines: Sequence[str]) -> str:
    return "\n".join([NOTE_HEAD, *(line for line in lines if line)])


def with_note(message: Message, lines: Sequence[str]) -> Message:
    """`message` (the person's newest) with the note after their words."""
    if not any(lines):
        return message
    note = note_text(lines)
    content = message.get("content")
    if isinstance(content, list):  # a photo: the note is one more text part
        return {**message, "content": [*content, {"type": "text", "text": note}]}
    said = content if isinstance(content, str) else ""
    return {**message, "content": f"{said}\n\n{note}" if said else note}
