"""Issue [truth], by SMS (signed webhooks, the real twilio library against the fake REST
server): Valet says what really happened. SMS cannot edit the card, so the reply to "1" says
what became of it when it was not done; /pending and the operator's table say the same, and
so does the model's tool result.
"""

from __future__ import annotations

import pytest

from bot.approvals.listing import table_rows
from bot.config.sections import AgentsSettings, OwnerSettings
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.sms_harness import ALICE, SmsWorld, sms_world


@pytest.fixture
async def world(app_factory, tmp_path):
    registry = tmp_path / "pay.yaml"
    registry.write_text("tools:\n  - module: tests.fakes.risky_tools\n    only: [pay_invoice]\n"
                        "    approval: always\n")
    world, close = await sms_world(app_factory, owner=OwnerSettings(phone_numbers=[ALICE]),
                                   agents=AgentsSettings(registries=[str(registry)],
                                                         answer_check="heuristic"))
    yield world
    await close()


async def says(world: SmsWorld, text: str) -> str:
    await world.text(text)
    await world.idle()
    return world.replies()[-1]


def tool_results(fake_llm) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(m["content"]) for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def statuses(world: SmsWorld) -> list[str]:
    return [row[3] for row in table_rows(await world.app.approvals.store.list())]


async def dentist_card(world: SmsWorld, fake_llm) -> int:  # type: ignore[no-untyped-def]
    note = await world.app.services.stores.notes.add("owner", "Dentist", "Tue 3pm",
                                                     world.app.clock.now())
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": note.id})]))
    card = await says(world, "delete the dentist note")
    assert f'Delete the note #{note.id} "Dentist"? Reply 1 to' in card  # (GSM-7 quotes)
    return note.id


async def test_a_refused_action_is_said_so_in_the_reply_the_list_and_to_the_model(
        world, fake_llm):
    note_id = await dentist_card(world, fake_llm)
    await world.app.services.stores.notes.delete("owner", note_id)  # gone meanwhile
    fake_llm.script(Reply(content="That note was already gone."))
    reply = await says(world, "1")
    assert reply == (f'Refused: Delete the note #{note_id} "Dentist"\n\n'
                     "That note was already gone.")
    assert await statuses(world) == [f"refused by sms:{ALICE}"]
    assert tool_results(fake_llm)[-1].startswith("Refused: there is no note")
    pending = await says(world, "/pending")
    assert f'Lately, not done:\nRefused: Delete the note #{note_id} "Dentist"' in pending
    assert "Done" not in " ".join(world.replies())


async def test_a_failed_action_is_said_so_in_the_reply_the_list_and_to_the_model(
        world, fake_llm):
    risky_tools.CHARGES.clear()
    fake_llm.script(Reply(tool_calls=[ToolCall("pay_invoice", {"invoice": "INV-7",
                                                               "amount": 120})]))
    await says(world, "pay invoice 7")
    fake_llm.script(Reply(content="The payment service is down."))
    reply = await says(world, "1")
    assert reply == ("Failed: pay invoice (invoice: INV-7, amount: 120)\n\n"
                     "The payment service is down.")
    assert await statuses(world) == [f"failed by sms:{ALICE}"]
    assert tool_results(fake_llm)[-1].startswith("Error: RuntimeError: the payment service")


async def test_deleting_a_note_that_does_not_exist_shows_no_card(world, fake_llm):
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": 5})]),
                    Reply(content="You have no note #5."))
    assert await says(world, "delete note 5") == "You have no note #5."
    assert tool_results(fake_llm)[-1].startswith("Error: there is no note #5")
    assert await world.app.approvals.store.list() == []


async def test_a_new_request_while_an_approval_waits_is_answered_and_the_approval_stays(
        world, fake_llm):
    note_id = await dentist_card(world, fake_llm)
    fake_llm.script(  # no classifier reads the reply (issue 43): the loop's calls only
        Reply(tool_calls=[ToolCall("draft_reminder", {"what": "call mom", "when": "1pm"})]),
        Reply(content="I'll remind you at 13:00 to call mom."))
    reply = await says(world, "remind me at 1pm to call mom, no rush")
    assert reply == ("I'll remind you at 13:00 to call mom.\n\n"
                     f'Still waiting for your OK: Delete the note #{note_id} "Dentist". '
                     "Reply YES or NO.")
    [reminder] = await world.app.db.fetch("SELECT text FROM reminders")
    assert reminder["text"] == "call mom"
    pending = await says(world, "/pending")
    assert f'1. Delete the note #{note_id} "Dentist"' in pending
    # and it can still be answered
    fake_llm.script(Reply(content="Deleted."))
    assert await says(world, "yes") == "Deleted."
    assert await world.app.services.stores.notes.get("owner", note_id) is None
