"""What the console shows during a turn: progress lines for tools that run, none for a call
that only produced an approval request, and the card numbered as /pending numbers it."""

from __future__ import annotations

from bot.cli.chat import approval_gated
from bot.contracts.envelopes import EventType, LoopEvent
from channels.console.channel import ConsoleChannel, ConsoleChat
from channels.console.tty import TtyScreen
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


def test_one_getting_ready_line_per_turn_however_many_capabilities_open():
    shown: list[str] = []
    screen = TtyScreen(write=shown.append)
    opening = LoopEvent(EventType.TOOL_CALL_START, {"name": "open_capability",
                                                    "progress": "getting ready"})
    for _ in range(8):
        screen.event(opening)
    screen.event(LoopEvent(EventType.TOOL_CALL_START, {"name": "calculate",
                                                       "progress": "using calculate"}))
    assert [line for line in "".join(shown).splitlines() if "…" in line] == [
        "\x1b[2m  … getting ready\x1b[0m", "\x1b[2m  … using calculate\x1b[0m"]
    screen.reply("Done.")
    screen.event(opening)  # the next turn says it again, once
    assert "".join(shown).count("getting ready") == 2


def test_log_lines_and_stall_warnings_never_reach_the_chat():
    import logging

    from channels.console.notes import ChatNotes

    notes: list[str] = []
    handler = ChatNotes(notes.append)
    stall = logging.LogRecord("bot.plumbing.stall", logging.WARNING, __file__, 1,
                              "event loop stalled for %d ms (threshold %d ms); running: %s",
                              (900, 250, "x"), None)
    failure = logging.LogRecord("bot.gateway.gateway", logging.ERROR, __file__, 1,
                                "turn %s failed", ("inbox-1",), None)
    retry = logging.LogRecord("bot.llm.recovery", logging.WARNING, __file__, 1,
                              "llm call failed (%s, attempt %d): %s -> %s",
                              ("LLMRateLimitError", 1, "429", None), None)
    for record in (stall, failure, retry):
        handler.handle(record)
    # Nothing else was tried (issue 45: "trying another way" only when another way is).
    assert notes == ["(the LLM is busy (rate limited); not trying again (attempt 1))"]


def test_notes_say_what_is_tried_in_words():
    import logging

    from bot.llm.recovery import Escalate, GiveUp, Retry
    from channels.console.notes import ChatNotes

    notes: list[str] = []
    handler = ChatNotes(notes.append)

    def failed(kind: str, decision: object) -> logging.LogRecord:
        return logging.LogRecord("bot.llm.recovery", logging.WARNING, __file__, 1,
                                 "llm call failed (%s, attempt %d): %s -> %s",
                                 (kind, 1, "...", decision), None)

    for record in (failed("LLMTimeoutError", Retry(0.0)),
                   failed("LLMTimeoutError", GiveUp()),
                   failed("LLMContextOverflowError", Escalate()),
                   failed("SomethingNewError", GiveUp()),
                   logging.LogRecord("bot.loop.react", logging.WARNING, __file__, 1,
                                     "model %s failed (%s); the turn goes on with %s",
                                     ("small", "LLMServerError", "backup"), None)):
        handler.handle(record)
    assert notes == [
        "(the LLM did not answer in time; trying again in 0 s (attempt 1))",
        "(the LLM did not answer in time; not trying again (attempt 1))",
        "(the conversation is too long for the model; asking again with less of the "
        "conversation (attempt 1))",
        "(the LLM request failed; not trying again (attempt 1))",
        "(the LLM server had a problem (small); trying another model: backup)"]
    assert not any("Error" in note for note in notes)
