"""Issue [truth], on Telegram (the real python-telegram-bot against the fake Bot API): Valet
says what really happened.

- an approved action its tool refuses (the note was deleted meanwhile) or that fails (the
  payment service is down): the card is edited "Refused" / "Failed", never "Done"; the
  operator's table and the model's tool result say the same;
- deleting a note that does not exist: no card, the model hears there is no such note;
- with an approval pending, "remind me at 1pm to call mom, no rush" while the reply
  classifier answers garbage: the reminder is set and answered, and the approval still waits.
"""

from __future__ import annotations

from bot.approvals.listing import table_rows
from tests.e2e.telegram_harness import OWNER_CHAT, bot_messages
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall


def configure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    registry = tmp_path / "pay.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [pay_invoice]\n"
                        "    approval: always\n")
    (tmp_path / "valet.yaml").write_text(
        "loop:\n  llm_retry_base_delay: 0.01\ntool_exposure: all\nmemory:\n  enabled: false\n"
        f"agents:\n  registries: [{registry}]\n  answer_check: heuristic\n"
        "owner:\n  telegram_ids: ['42']\n")


async def started(start_telegram, tmp_path):  # type: ignore[no-untyped-def]
    configure(tmp_path)
    h = await start_telegram()
    owner = await h.app.ensure_owner()
    return h, owner.id


async def card_for(h, fake_llm, call: ToolCall, said: str):  # type: ignore[no-untyped-def]
    fake_llm.script(Reply(tool_calls=[call]))
    h.tg.user_says(OWNER_CHAT, said)
    await h.tg.wait_for(lambda: any(m.buttons for m in h.tg.sent(OWNER_CHAT)), timeout=30)
    [card] = [m for m in h.tg.sent(OWNER_CHAT) if m.buttons]
    return card, {b["text"].split()[-1]: b["callback_data"] for b in card.buttons}


def tool_results(fake_llm) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(m["content"]) for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def statuses(app) -> list[str]:  # type: ignore[no-untyped-def]
    """The STATUS column of `valet approvals list`."""
    return [row[3] for row in table_rows(await app.approvals.store.list())]


async def test_a_refused_action_reads_refused_on_the_card_the_list_and_for_the_model(
        start_telegram, fake_llm, tmp_path):
    h, me = await started(start_telegram, tmp_path)
    notes = h.app.services.stores.notes
    note = await notes.add(me, "Dentist", "Tue 3pm", h.app.clock.now())
    card, data = await card_for(h, fake_llm, ToolCall("delete_note", {"note_id": note.id}),
                                "delete the dentist note")
    assert f"Delete the note #{note.id} “Dentist”" in card.text
    await notes.delete(me, note.id)  # gone before the tap (another device, another turn)
    fake_llm.script(Reply(content="That note was already gone, so nothing was deleted."))
    h.tg.user_presses(OWNER_CHAT, card.message_id, data["Approve"])
    await h.tg.wait_for(lambda: not card.buttons, timeout=30)
    await h.app.gateway.wait_idle()
    assert f"Refused: Delete the note #{note.id} “Dentist”" in card.text
    assert "Done" not in card.text
    assert await statuses(h.app) == ["refused by telegram:42"]
    assert tool_results(fake_llm)[-1] == (f"Refused: there is no note #{note.id} any more; "
                                          "nothing was deleted.")
    assert "That note was already gone, so nothing was deleted." in bot_messages(
        h.tg, OWNER_CHAT)


async def test_a_failed_action_reads_failed_on_the_card_the_list_and_for_the_model(
        start_telegram, fake_llm, tmp_path):
    risky_tools.CHARGES.clear()
    h, _ = await started(start_telegram, tmp_path)
    card, data = await card_for(h, fake_llm, ToolCall("pay_invoice", {
        "invoice": "INV-7", "amount": 120}), "pay invoice 7")
    fake_llm.script(Reply(content="The payment service is down; nothing was paid."))
    h.tg.user_presses(OWNER_CHAT, card.message_id, data["Approve"])
    await h.tg.wait_for(lambda: not card.buttons, timeout=30)
    await h.app.gateway.wait_idle()
    assert "Failed: pay invoice (invoice: INV-7, amount: 120)" in card.text
    assert "Done" not in card.text
    assert await statuses(h.app) == ["failed by telegram:42"]
    assert tool_results(fake_llm)[-1] == ("Error: RuntimeError: the payment service answered "
                                          "503 Service Unavailable")
    assert risky_tools.CHARGES == [{"invoice": "INV-7", "amount": "120"}]  # tried once


async def test_deleting_a_note_that_does_not_exist_shows_no_card(start_telegram, fake_llm,
                                                                 tmp_path):
    h, _ = await started(start_telegram, tmp_path)
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": 5})]),
                    Reply(content="You have no note #5."))
    h.tg.user_says(OWNER_CHAT, "delete note 5")
    await h.tg.wait_for(lambda: "You have no note #5." in bot_messages(h.tg, OWNER_CHAT),
                        timeout=30)
    await h.app.gateway.wait_idle()
    assert not any(m.buttons for m in h.tg.sent(OWNER_CHAT))
    assert tool_results(fake_llm)[-1].startswith("Error: there is no note #5")
    assert await h.app.approvals.store.list() == []


async def test_a_new_request_while_an_approval_waits_is_answered_and_the_approval_stays(
        start_telegram, fake_llm, tmp_path):
    h, me = await started(start_telegram, tmp_path)
    note = await h.app.services.stores.notes.add(me, "Dentist", "Tue 3pm", h.app.clock.now())
    card, _ = await card_for(h, fake_llm, ToolCall("delete_note", {"note_id": note.id}),
                             "delete the dentist note")
    fake_llm.script(  # no classifier reads the reply (issue 43): the loop's calls only
        Reply(tool_calls=[ToolCall("draft_reminder", {"what": "call mom", "when": "1pm"})]),
        Reply(content="I'll remind you at 13:00 to call mom."))
    h.tg.user_says(OWNER_CHAT, "remind me at 1pm to call mom, no rush")
    await h.tg.wait_for(lambda: any("I'll remind you" in t
                                    for t in bot_messages(h.tg, OWNER_CHAT)), timeout=30)
    answer = next(t for t in bot_messages(h.tg, OWNER_CHAT) if "I'll remind you" in t)
    assert answer == ("I'll remind you at 13:00 to call mom.\n\n"
                      f"Still waiting for your OK: Delete the note #{note.id} “Dentist”. "
                      "Reply YES or NO.")
    assert not any("Which one" in t for t in bot_messages(h.tg, OWNER_CHAT))
    [reminder] = await h.app.db.fetch("SELECT text FROM reminders")
    assert reminder["text"] == "call mom"
    assert card.buttons  # still waiting, buttons and all
    h.tg.user_says(OWNER_CHAT, "/pending")
    await h.tg.wait_for(lambda: "Waiting for your OK" in bot_messages(h.tg, OWNER_CHAT)[-1],
                        timeout=30)
    assert f"1. Delete the note #{note.id} “Dentist”" in bot_messages(h.tg, OWNER_CHAT)[-1]
    assert await h.app.services.stores.notes.get(me, note.id) is not None
