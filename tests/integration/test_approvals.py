"""Structured approvals as the person experiences them: asked once, decided once, run once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.config.sections import AgentsSettings, ApprovalSettings
from bot.contracts.approvals import ApprovalStatus
from bot.contracts.envelopes import ButtonPress, Inbound
from channels.console.channel import render_prompt
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import assert_closed, requests_of, told

EMAIL = {"to": "team@corp.example", "subject": "Q3", "body": "Numbers attached."}
FLIGHT = {"origin": "LHR", "destination": "JFK", "date": "2026-03-03"}


def registry_file(tmp_path, log: str = "") -> AgentsSettings:
    path = tmp_path / "risky.yaml"
    settings = f"\n    settings: {{log: {log}}}" if log else ""
    path.write_text(
        "tools:\n"
        "  - module: tests.fakes.risky_tools\n    only: [send_email, book_flight]\n"
        f"    approval: always{settings}\n"
        "  - module: tests.fakes.risky_tools\n    only: [read_inbox]\n")
    return AgentsSettings(registries=[str(path)], answer_check="heuristic")


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()
    risky_tools.BOOKED.clear()


async def start(app_factory, tmp_path, **overrides):
    app = await app_factory(agents=registry_file(tmp_path), **overrides)
    owner = await app.ensure_owner()
    return app, owner.id


def say(app, user: str, text: str = "", button: ButtonPress | None = None):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text, button=button, address="local",
        received_at=datetime(2026, 1, 5, 9, tzinfo=UTC)))


def tool_results(request) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def ask_for_email(app, me, fake_llm, args=EMAIL):
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", args)]))
    reply = await say(app, me, "email the team the Q3 numbers")
    assert len(await requests_of(app, reply)) == 1
    return reply


async def test_approve_runs_the_stored_call_once_and_the_loop_answers(app_factory, fake_llm,
                                                                      tmp_path):
    app, me = await start(app_factory, tmp_path)
    reply = await ask_for_email(app, me, fake_llm)
    [approval] = (await requests_of(app, reply))
    assert reply.text == "Before I go ahead, I need your OK:"  # channels render the request
    assert approval.summary == ("send email (to: team@corp.example, subject: Q3, body: "
                                "Numbers attached.)")
    assert approval.code in render_prompt(reply.prompts[0]) and risky_tools.SENT == []
    assert reply.stop.value == "waiting_for_user"
    # The call got its "waiting" result at once: the history is valid while it waits.
    waiting = [m for m in await app.history.load(me) if m["role"] == "tool"]
    assert "waiting for the user's approval" in waiting[0]["content"]
    fake_llm.script(LLMReply(content="Done: the team has the Q3 numbers."))
    reply = await say(app, me, "yes")
    assert reply.text == "Done: the team has the Q3 numbers."
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]
    # The approval id is the action's idempotency key; the outcome flows back as a result.
    assert risky_tools.SENT[0]["idempotency_key"] == approval.id
    assert "Email sent to team@corp.example" in tool_results(fake_llm.requests[-1])[-1]
    stored = await app.approvals.store.get(approval.id)
    assert stored.status is ApprovalStatus.EXECUTED and stored.decided_by == "console:local"
    assert_closed(await app.history.load(me))


async def test_reject_runs_nothing_and_the_llm_hears_it_was_cancelled(app_factory, fake_llm,
                                                                      tmp_path):
    app, me = await start(app_factory, tmp_path)
    await ask_for_email(app, me, fake_llm)
    fake_llm.script(LLMReply(content="Okay, I won't send it."))
    reply = await say(app, me, "no")
    assert reply.text == "Okay, I won't send it."
    assert risky_tools.SENT == []
    assert tool_results(fake_llm.requests[-1])[-1] == "User cancelled this action."


async def test_the_same_decision_twice_and_concurrently_runs_the_action_once(
        app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    reply = await ask_for_email(app, me, fake_llm)
    [approval] = (await requests_of(app, reply))
    fake_llm.responder = lambda req: LLMReply(content="Sent.")
    press = ButtonPress(approval.id, "approve")
    replies = await asyncio.gather(*[say(app, me, button=press) for _ in range(5)])
    assert len(risky_tools.SENT) == 1
    assert sum("already" in r.text for r in replies) == 4
    again = await say(app, me, button=press)
    assert "already done" in again.text and len(risky_tools.SENT) == 1


async def test_edit_makes_a_new_approval_shown_for_confirmation(app_factory, fake_llm,
                                                                tmp_path):
    app, me = await start(app_factory, tmp_path)
    [first] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    fake_llm.script(LLMReply(content='{"to": "team@corp.example", "subject": "Q3 numbers", '
                                     '"body": "Numbers attached."}'))
    # The edit form (issue 43: a change inside a sentence, "send it but make ...", is none).
    reply = await say(app, me, "change the subject to 'Q3 numbers'")
    [edited] = (await requests_of(app, reply))
    assert edited.id != first.id and edited.arguments["subject"] == "Q3 numbers"
    assert edited.replaces == first.id and "subject: Q3 numbers" in edited.summary
    assert risky_tools.SENT == []
    assert (await app.approvals.store.get(first.id)).status is ApprovalStatus.SUPERSEDED
    fake_llm.script(LLMReply(content="Sent with the new subject."))
    assert (await say(app, me, "yes")).text == "Sent with the new subject."
    assert [e["subject"] for e in risky_tools.SENT] == ["Q3 numbers"]


async def test_after_the_edit_button_the_next_message_is_the_change_in_any_words(
        app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    [first] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    asked = await say(app, me, button=ButtonPress(first.id, "edit"))
    assert asked.text.startswith("What should I change in “send email")
    # No "change" or "make" in it: it is the change because Valet just asked for one.
    fake_llm.script(LLMReply(content='{"to": "team@corp.example", "subject": "Q3 numbers", '
                                     '"body": "Numbers attached."}'))
    reply = await say(app, me, "the subject should be 'Q3 numbers'")
    [edited] = await requests_of(app, reply)
    assert edited.replaces == first.id and edited.arguments["subject"] == "Q3 numbers"
    assert (await app.approvals.store.get(first.id)).status is ApprovalStatus.SUPERSEDED
    # Only the message right after the question: the next one goes to the loop as usual.
    fake_llm.script(LLMReply(content="It's sunny. (The email still waits for your OK.)"))
    assert (await say(app, me, "what's the weather like?")).text.startswith("It's sunny")
    assert (await app.approvals.store.get(edited.id)).status is ApprovalStatus.PENDING
    assert risky_tools.SENT == []


async def test_an_edit_never_approves_it_makes_a_new_card(app_factory, fake_llm, tmp_path):
    """Issue 43: an edit is never a yes (`approvals.confirm_edits: false`, which ran it at
    once, is gone: such a config is refused with the key named)."""
    with pytest.raises(ValueError, match="confirm_edits"):
        ApprovalSettings(confirm_edits=False)
    app, me = await start(app_factory, tmp_path)
    [first] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    fake_llm.script(LLMReply(content='{"to": "team@corp.example", "subject": "Q3 final"}'))
    reply = await say(app, me, "change the subject to Q3 final")
    [edited] = await requests_of(app, reply)
    assert edited.replaces == first.id and edited.status is ApprovalStatus.PENDING
    assert risky_tools.SENT == []
    fake_llm.script(LLMReply(content="Sent, subject 'Q3 final'."))
    assert (await say(app, me, "yes")).text == "Sent, subject 'Q3 final'."
    assert [e["subject"] for e in risky_tools.SENT] == ["Q3 final"]


async def test_an_edit_that_does_not_validate_changes_nothing(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    [first] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    fake_llm.script(LLMReply(content='{"subject": "no recipient any more"}'))
    reply = await say(app, me, "change it so it has no recipient")
    assert "couldn't make that change" in reply.text
    assert (await app.approvals.store.get(first.id)).status is ApprovalStatus.PENDING


async def test_expiry_runs_nothing_tells_the_user_and_the_llm(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    app.clock.advance(minutes=31)
    fake_llm.script(LLMReply(content="It expired, so nothing was sent."))
    reply = await say(app, me, "yes")
    assert "waited 30 minutes for your OK" in reply.text
    assert reply.text.endswith("It expired, so nothing was sent.")
    assert risky_tools.SENT == []
    assert "the request expired" in tool_results(fake_llm.requests[-1])[-1]
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.EXPIRED


async def test_a_button_pressed_after_expiry_says_it_expired_at_once(app_factory, fake_llm,
                                                                     tmp_path):
    app, me = await start(app_factory, tmp_path)
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    user = await app.users.get(me)
    answer = app.gateway.deps.answer_button
    assert answer is not None and user is not None
    assert await answer(user, ButtonPress(approval.id, "approve")) == "Approving…"
    app.clock.advance(minutes=31)  # past its time, before the sweeper marked it
    assert await answer(user, ButtonPress(approval.id, "approve")) == "Already expired."
    assert risky_tools.SENT == []


async def test_the_sweeper_tells_the_user_without_waiting_for_them(app_factory, fake_llm,
                                                                   tmp_path):
    from tests.helpers import RecordingSender

    app, me = await start(app_factory, tmp_path)
    console = RecordingSender("console")
    app.add_channel(console)
    await ask_for_email(app, me, fake_llm)
    await app.start()
    app.clock.advance(minutes=31)
    await app.sweep_approvals()  # one pass of the service's own sweeper
    await app.sweep_approvals()  # a second pass tells nobody twice
    await app.gateway.wait_idle()
    [told] = console.texts()
    assert "send email" in told and "didn't do it" in told
    # The LLM still hears of it at the next message, without telling the user twice.
    fake_llm.script(LLMReply(content="Noted."))
    reply = await say(app, me, "hello")
    assert reply.text == "Noted."
    assert "the request expired" in tool_results(fake_llm.requests[-1])[-1]


async def test_two_approvals_of_one_turn_are_shown_together_and_answered_in_one_reply(
        app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL),
                                         ToolCall("book_flight", FLIGHT),
                                         ToolCall("current_time", {})]))
    reply = await say(app, me, "email the team, book my flight, and what time is it?")
    assert [a.tool_name for a in (await requests_of(app, reply))] == ["send_email", "book_flight"]
    history = await app.history.load(me)
    assert "1. send email" in history[-1]["content"] and "2. book flight" in history[-1]["content"]
    # The sibling that needs no approval ran in the same round; its result is kept.
    history = await app.history.load(me)
    assert any(m["role"] == "tool" and "ISO 8601" in (m["content"] or "") for m in history)
    fake_llm.script(LLMReply(content="Email sent; flight not booked."))
    reply = await say(app, me, "1 yes 2 no")  # a verb or a name is no answer (issue 43)
    assert reply.text == "Email sent; flight not booked."
    assert len(risky_tools.SENT) == 1 and risky_tools.BOOKED == []
    results = tool_results(fake_llm.requests[-1])
    assert "Email sent" in results[-2] and results[-1] == "User cancelled this action."
    assert_closed(await app.history.load(me))


async def test_two_approvals_answered_one_at_a_time_by_number_and_code(app_factory, fake_llm,
                                                                      tmp_path):
    app, me = await start(app_factory, tmp_path)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL),
                                         ToolCall("book_flight", FLIGHT)]))
    reply = await say(app, me, "email the team and book my flight")
    email, flight = (await requests_of(app, reply))
    calls = fake_llm.calls
    reply = await say(app, me, "yes")  # which one? never a guess
    assert "Which one" in reply.text and fake_llm.calls == calls
    fake_llm.script(LLMReply(content="Email sent."))
    await say(app, me, "1 yes")
    assert len(risky_tools.SENT) == 1 and risky_tools.BOOKED == []
    assert [a.id for a in await app.approvals.store.pending(me, app.clock.now())] == [flight.id]
    fake_llm.script(LLMReply(content="Booked."))
    await say(app, me, f"YES {flight.code}")
    assert len(risky_tools.BOOKED) == 1
    assert (await app.approvals.store.get(email.id)).status is ApprovalStatus.EXECUTED


async def test_unknown_references_are_refused(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    await ask_for_email(app, me, fake_llm)
    calls = fake_llm.calls
    reply = await say(app, me, "YES 0000")
    assert "nothing waiting under 0000" in reply.text and fake_llm.calls == calls
    reply = await say(app, me, button=ButtonPress("no-such-approval", "approve"))
    assert "don't know that request" in reply.text
    assert risky_tools.SENT == []


async def test_only_the_owner_of_a_request_can_decide_it(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    await app.users.ensure("mallory", at=app.clock.now())
    reply = await say(app, "mallory", button=ButtonPress(approval.id, "approve"))
    assert "isn't yours" in reply.text
    assert risky_tools.SENT == []
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.PENDING


async def test_a_tool_result_cannot_talk_the_loop_past_approval(app_factory, fake_llm,
                                                                tmp_path):
    app, me = await start(app_factory, tmp_path)
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("read_inbox", {})]),
        # The model falls for the injected text and calls send_email with its arguments...
        LLMReply(tool_calls=[ToolCall("send_email", {"to": "boss@corp.example",
                                                     "subject": "wire the money"})]))
    reply = await say(app, me, "read my newest email")
    # ...which only produces an approval request for the person to refuse.
    assert risky_tools.SENT == []
    assert [a.arguments["to"] for a in (await requests_of(app, reply))] == ["boss@corp.example"]
    fake_llm.script(LLMReply(content="I didn't send anything."))
    await say(app, me, "no!")
    assert risky_tools.SENT == []


async def test_slash_pending_lists_what_waits(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    calls = fake_llm.calls
    reply = await say(app, me, "/pending")
    assert "Waiting for your OK" in reply.text and approval.code in reply.text
    assert fake_llm.calls == calls
    pending = await app.approvals.store.pending(me, app.clock.now())
    assert [p.id for p in pending] == [approval.id]


async def test_an_unrelated_message_goes_to_the_loop_and_the_approval_stays(
        app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    fake_llm.script(LLMReply(content="It's sunny. (The email is still waiting for your OK.)"))
    reply = await say(app, me, "what's the weather like?")
    assert reply.text.startswith("It's sunny")
    system = told(fake_llm.requests[-1]["messages"])
    assert "Waiting for the user's approval" in system and approval.code in system
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.PENDING


async def test_a_builtin_delete_needs_approval(app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    note = await app.services.stores.notes.add(me, "wifi", "pw 1234",
                                                             app.clock.now())
    fake_llm.script(LLMReply(tool_calls=[ToolCall("delete_note", {"note_id": note.id})]))
    reply = await say(app, me, "delete the wifi note")
    assert [a.tool_name for a in (await requests_of(app, reply))] == ["delete_note"]
    assert await app.services.stores.notes.recent(me)
    fake_llm.script(LLMReply(content="Deleted."))
    await say(app, me, "yes")
    assert await app.services.stores.notes.recent(me) == []


async def test_the_owner_can_decide_someone_elses_request_and_they_hear_of_it(
        app_factory, fake_llm, tmp_path):
    app, owner = await start(app_factory, tmp_path)
    await app.users.ensure("kim", at=app.clock.now())
    [approval] = await requests_of(app, await ask_for_email(app, "kim", fake_llm))
    reply = await say(app, owner, button=ButtonPress(approval.id, "approve"))
    assert reply.text.startswith("Approved “send email") and "for kim" in reply.text
    assert len(risky_tools.SENT) == 1
    assert risky_tools.SENT[0]["idempotency_key"] == approval.id
    # Kim's conversation gets the outcome as the call's result with her next message.
    fake_llm.script(LLMReply(content="Your email went out."))
    assert (await say(app, "kim", "did it go?")).text == "Your email went out."
    assert "Email sent to team@corp.example" in tool_results(fake_llm.requests[-1])[-1]
    assert_closed(await app.history.load("kim"))
    assert await app.approvals.list_pending_approvals("kim") == []


async def test_the_owners_approval_runs_in_the_requesters_timezone(app_factory, fake_llm,
                                                                    tmp_path):
    app, owner = await start(app_factory, tmp_path)
    await app.users.set_timezone(owner, "Europe/London")
    await app.users.ensure("kim", timezone="Asia/Tokyo", at=app.clock.now())
    [approval] = await requests_of(app, await ask_for_email(app, "kim", fake_llm))
    await say(app, owner, button=ButtonPress(approval.id, "approve"))
    assert [(e["user"], e["timezone"]) for e in risky_tools.SENT] == [("kim", "Asia/Tokyo")]


async def test_the_delete_card_names_the_note_and_shows_no_argument_twice(
        app_factory, fake_llm, tmp_path):
    app, me = await start(app_factory, tmp_path)
    note = await app.services.stores.notes.add(me, "Dentist", "Tuesday 3pm",
                                                             app.clock.now())
    fake_llm.script(LLMReply(tool_calls=[ToolCall("delete_note", {"note_id": note.id})]))
    reply = await say(app, me, "delete the dentist note")
    [prompt] = reply.prompts
    assert prompt.summary == f"Delete the note #{note.id} “Dentist”"
    card = render_prompt(prompt)
    assert card.startswith(f"1. Delete the note #{note.id} “Dentist” (code {prompt.code})")
    assert card.count("Dentist") == 1
    listing = (await say(app, me, "/pending")).text
    assert f"1. Delete the note #{note.id} “Dentist” (code {prompt.code}" in listing


async def test_a_press_redone_after_its_turn_was_cut_short_is_answered_with_the_outcome(
        app_factory, fake_llm, tmp_path):
    """A worker killed after the approved action ran, before the turn was stored: the press
    is redone elsewhere. It is answered as the first run would have been (the model reads the
    outcome), never "already done"; the action does not run again; a later press is
    "already done"."""
    app, me = await start(app_factory, tmp_path)
    [approval] = await requests_of(app, await ask_for_email(app, me, fake_llm))
    store, now = app.approvals.store, app.clock.now()
    # What the cut-short turn left: decided, run, recorded, not reported to the conversation.
    assert await store.decide(approval.id, ApprovalStatus.APPROVED, by="console:local", at=now)
    assert await store.begin_execution(approval.id, now)
    await store.finish(approval.id, ApprovalStatus.EXECUTED, "Email sent to team@corp.example")

    fake_llm.script(LLMReply(content="Sent to the team."))
    press = ButtonPress(approval.id, "approve")
    redo = await say(app, me, button=press)
    assert redo.text == "Sent to the team."
    assert tool_results(fake_llm.requests[-1])[-1] == "Email sent to team@corp.example"
    assert risky_tools.SENT == []  # it ran in the cut-short turn (here: recorded only)

    again = await say(app, me, button=press)
    assert "already done" in again.text
