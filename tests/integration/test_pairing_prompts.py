"""A pairing request reaches the owner as a prompt of its own kind. By SMS it is answered with
its code ("PAIR 4K7QXZ", "DENY 4K7QXZ"), never a bare digit, no LLM involved (issue 34 item
2): a stranger texting can never make the owner's next "1" mean something else, and a bare
"yes" that could answer both an approval and a pairing request asks which, naming each."""

from __future__ import annotations

import re

import pytest

from bot.config.sections import OwnerSettings
from tests.fakes.fake_openai import Reply, ToolCall
from tests.integration.sms_harness import SmsWorld, sms_world

SAM = "+12125550123"
STRANGER = "+13125550177"  # a country Valet may text (the owner's)


@pytest.fixture
async def world(app_factory):
    world, close = await sms_world(app_factory, allow=(), policy="pairing",
                                   owner=OwnerSettings(name="Sam", phone_numbers=[SAM]))
    yield world
    await close()


async def pairing_notice(world: SmsWorld, stranger: str = STRANGER) -> str:
    """The stranger texts; the owner's notice; its code."""
    await world.text("hi, who is this?", sender=stranger)
    await world.idle()
    notice = world.replies(SAM)[-1]
    found = re.search(r"Reply PAIR (\w+) to let them in, or DENY \1 to refuse\.", notice)
    assert found is not None, notice
    # The code is random (it may end in "2", as TQ4YZ2 did): only the words around it count.
    words = notice.replace(found.group(1), "<code>")
    assert "Reply 1" not in words and "2 to" not in words
    return found.group(1)


async def test_the_owner_lets_a_stranger_in_with_pair_and_the_code(world, fake_llm):
    code = await pairing_notice(world)
    await world.text(f"PAIR {code}", sender=SAM)
    await world.idle()
    assert world.replies(SAM)[-1].startswith(f"Approved {code}")
    # A stranger by SMS has no name: they are named by their number, never an internal id.
    assert world.replies(SAM)[-1].endswith(f": {STRANGER} can talk to me now.")
    assert "u_" not in world.replies(SAM)[-1]
    assert await world.app.identities.resolve("sms", STRANGER) is not None
    assert any("You're in" in reply for reply in world.replies(STRANGER))
    assert fake_llm.requests == []


async def test_the_owner_refuses_a_stranger_with_deny_and_the_code(world, fake_llm):
    code = await pairing_notice(world)
    await world.text(f"deny {code.lower()}", sender=SAM)
    await world.idle()
    assert world.replies(SAM)[-1] == f"Denied {code}."
    assert await world.app.identities.resolve("sms", STRANGER) is None
    assert fake_llm.requests == []


async def test_a_bare_digit_never_answers_a_pairing_request(world, fake_llm):
    await pairing_notice(world)
    fake_llm.script(Reply(content="1 what?"), Reply(content="2 what?"))
    for digit in ("1", "2"):
        await world.text(digit, sender=SAM)
        await world.idle()
    assert await world.app.identities.resolve("sms", STRANGER) is None
    pending = await world.app.access.list_pairings(world.app.clock.now())
    assert [p.address for p in pending] == [STRANGER]  # still waiting for the owner
    assert world.replies(SAM)[-2:] == ["1 what?", "2 what?"]


async def test_words_that_only_look_like_an_answer_go_to_the_llm(world, fake_llm):
    """"deny access" from the owner names no pairing code Valet gave out: a message."""
    fake_llm.script(Reply(content="Denied whose access?"))
    await world.text("deny access", sender=SAM)
    await world.idle()
    assert world.replies(SAM)[-1] == "Denied whose access?"


async def dentist_card(world: SmsWorld, fake_llm) -> int:  # type: ignore[no-untyped-def]
    note = await world.app.services.stores.notes.add("owner", "Dentist", "Tue 3pm",
                                                     world.app.clock.now())
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": note.id})]))
    await world.text("delete the dentist note", sender=SAM)
    await world.idle()
    assert "Reply 1 to delete, 2 to cancel" in world.replies(SAM)[-1]
    return note.id


async def test_a_stranger_texting_between_the_card_and_the_owners_1_changes_nothing(
        world, fake_llm):
    """The race of the issue: a "Delete note? Reply 1" card waits by SMS, a stranger texts
    so the owner's newest SMS is a pairing notice, the owner answers "1": the note is
    deleted and the stranger is not let in."""
    note_id = await dentist_card(world, fake_llm)
    await pairing_notice(world)
    fake_llm.script(Reply(content="Deleted the dentist note."))
    await world.text("1", sender=SAM)
    await world.idle()
    assert await world.app.services.stores.notes.get("owner", note_id) is None
    assert await world.app.identities.resolve("sms", STRANGER) is None
    assert world.replies(SAM)[-1] == "Deleted the dentist note."
    assert not any(r.startswith("Approved") for r in world.replies(SAM))


async def test_a_bare_yes_with_a_card_and_a_pairing_request_waiting_asks_which(
        world, fake_llm):
    note_id = await dentist_card(world, fake_llm)
    code = await pairing_notice(world)
    await world.text("yes", sender=SAM)
    await world.idle()
    asked = world.replies(SAM)[-1]
    assert asked.startswith("That could answer more than one thing:")
    assert 'Delete the note' in asked and f"PAIR {code}" in asked and STRANGER in asked
    assert await world.app.services.stores.notes.get("owner", note_id) is not None
    assert await world.app.identities.resolve("sms", STRANGER) is None
    [card] = await world.app.approvals.list_pending_approvals("owner")
    fake_llm.script(Reply(content="Deleted."))
    await world.text(f"{card.code} yes", sender=SAM)
    await world.idle()
    assert await world.app.services.stores.notes.get("owner", note_id) is None
    assert await world.app.identities.resolve("sms", STRANGER) is None
