"""Notes: an agent that saves one (title + text), and tools to list and search them.

Notes are per user, in the `notes` table.
"""

from __future__ import annotations

from typing import Any

from agents.base import AgentResult, InputField, StandardAgent
from agents.note_store import NoteStore
from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import CHANGES, READS, ToolOutcome, tool

MAX_TITLE = 120


def title_from(body: str, words: int = 6) -> str:
    first_line = body.strip().splitlines()[0] if body.strip() else "Note"
    parts = first_line.split()
    title = " ".join(parts[:words]) + ("…" if len(parts) > words else "")
    return title[:MAX_TITLE]


def notes_of(ctx: ToolExecutionContext) -> NoteStore:
    return services_of(ctx).stores.notes


class NoteAgent(StandardAgent):
    """Save a note for the user (a title and the text) to look up later. Use it when the user
    asks you to note, jot down, write down or keep something."""

    label = "note"

    title = InputField(
        str, "A short title for the note; leave it out to use the first words of the text",
        required=False, validator=lambda s: len(s) <= MAX_TITLE,
        validator_description=f"at most {MAX_TITLE} characters")
    body = InputField(str, "The text of the note, in the user's words",
                      prompt="note_ask_body")

    async def on_running(self) -> AgentResult:
        title = self.title or title_from(self.body)
        note = await notes_of(self.context).add(self.context.user_id, title, self.body,
                                                self.context.clock.now())
        return self.make_result(f"Saved note #{note.id} “{title}”.", id=note.id, title=title)


@tool(progress="looking through your notes", safe_to_repeat=True, does=READS)
async def list_notes(ctx: ToolExecutionContext, limit: int = 10) -> str:
    """List the user's most recent notes, newest first.

    Args:
        limit: How many notes to show (1-50).
    """
    notes = await notes_of(ctx).recent(ctx.user_id, max(1, min(limit, 50)))
    if not notes:
        return "The user has no notes yet."
    return "\n".join(n.line(ctx.tz) for n in notes)


@tool(progress="searching your notes", safe_to_repeat=True, does=READS)
async def search_notes(ctx: ToolExecutionContext, query: str, limit: int = 10) -> str:
    """Find the user's notes whose title or text contains all the given words.

    Args:
        query: Words to look for, e.g. "wifi password".
        limit: How many notes to show at most (1-50).
    """
    notes = await notes_of(ctx).search(ctx.user_id, query, max(1, min(limit, 50)))
    if not notes:
        return f"No notes match {query!r}."
    return "\n".join(n.line(ctx.tz) for n in notes)


async def describe_delete(arguments: dict[str, Any], ctx: ToolExecutionContext) -> str:
    """The approval card names the note: its number and its title."""
    note = await notes_of(ctx).get(ctx.user_id, int(arguments["note_id"]))
    if note is None:
        return f"Delete note #{arguments['note_id']} (there is no such note)"
    return f"Delete the note #{note.id} “{note.title}”"


async def check_delete(arguments: dict[str, Any], ctx: ToolExecutionContext
                       ) -> dict[str, Any]:
    """Before asking: the note exists (else no card; the model hears why)."""
    if await notes_of(ctx).get(ctx.user_id, int(arguments["note_id"])) is None:
        raise ValueError(f"there is no note #{arguments['note_id']}, so there is nothing to "
                         "delete (list_notes shows the notes and their numbers). The user was "
                         "not asked.")
    return arguments


@tool(progress="deleting the note", describe=describe_delete, prepare=check_delete, does=CHANGES)
async def delete_note(ctx: ToolExecutionContext, note_id: int) -> ToolOutcome:
    """Delete one of the user's notes for good, by its number (#12 -> 12). Look the number up
    with list_notes or search_notes first.

    Args:
        note_id: The note's number.
    """
    note = await notes_of(ctx).delete(ctx.user_id, note_id)
    if note is None:  # gone since the user was asked
        return ToolOutcome.refused(f"Refused: there is no note #{note_id} any more; nothing "
                                   "was deleted.")
    return ToolOutcome.done(f"Deleted note #{note.id} “{note.title}”.")
