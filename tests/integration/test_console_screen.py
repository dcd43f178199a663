"""What the console shows during a turn: progress lines for tools that run, none for a call
that only produced an approval request, and the card numbered as /pending numbers it."""

from __future__ import annotations

from bot.cli.chat import approval_gated
from bot.envelopes import EventType, LoopEvent
from channels.console import ConsoleChannel, ConsoleChat
from channels.console_tty import TtyScreen
from tests.fakes.fake_openai import Reply, ToolCall


async def test_no_progress_line_claims_a_delete_that_waits_for_approval(app_factory, fake_llm):
    app = await app_factory()
    shown: list[str] = []
    channel = ConsoleChannel(TtyScreen(write=shown.append), lines=app.persona.lines,
                             needs_approval=approval_gated(app.registry))
    app.add_channel(channel)
    await app.start()
    owner = await app.ensure_owner()
    note = await app.services.stores.notes.add(owner.id, "Dentist", "Tue 3pm", app.clock.now())
    fake_llm.script(Reply(tool_calls=[ToolCall("calculate", {"expression": "2+2"}),
                                      ToolCall("delete_note", {"note_id": note.id})]),
                    Reply(content="unused"))
    await ConsoleChat(app.gateway, channel, now=app.clock.now).say("sum, then delete a note")
    screen = "".join(shown)
    assert "… " in screen  # the calculator's progress line
    assert "deleting the note" not in screen
    assert f"1. Delete the note #{note.id} “Dentist”" in screen
    assert "[1]" not in screen


def test_streamed_text_is_shown_once_as_it_arrives():
    shown: list[str] = []
    screen = TtyScreen(write=shown.append)
    for chunk in ("Two ", "lines\nof ", "text"):  # what the loop emits while streaming
        screen.event(LoopEvent(EventType.MESSAGE_CHUNK, {"text": chunk}))
    assert "".join(shown) == "valet › Two lines\n"  # the partial line waits on the prompt
    screen.reply("Two lines\nof text")
    assert "".join(shown) == "valet › Two lines\nof text\n\n"
