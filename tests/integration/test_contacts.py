"""The address book on both databases, and through a conversation: a number said in any
spelling is kept in E.164, a name finds its contact whatever its case and accents, two Anas
make Valet ask which, a relationship finds the sister, deleting asks first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agents.contacts.store import ContactStore, clean_fields
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Inbound
from bot.people.users import UserStore
from tests.fakes.fake_openai import Reply, ToolCall
from tests.helpers import requests_of

NOON = datetime(2026, 5, 4, 12, tzinfo=UTC)


async def _people(db):  # type: ignore[no-untyped-def]
    users = UserStore(db)
    for uid in ("sam", "bob"):
        await users.ensure(uid, display_name=uid.title(), at=NOON)
    return ContactStore(db)


async def test_a_number_in_any_spelling_is_kept_in_e164_and_a_second_save_says_what_changed(db):
    store = await _people(db)
    first = await store.save("sam", "Ana Lopez", clean_fields(
        {"phone": "+1 (212) 555-0101", "relationship": "my sister"}), NOON)
    assert first.created and first.contact.phone == "+12125550101"
    assert first.contact.relationship == "sister"
    again = await store.save("sam", "ana lopez", clean_fields(
        {"phone": "+1 212 555 0199", "email": "Ana@Example.com"}), NOON)
    assert not again.created and again.contact.id == first.contact.id
    assert again.changed == ("phone: +12125550101 -> +12125550199",
                             "email: (none) -> ana@example.com")
    assert again.contact.relationship == "sister"  # a field not given stays as it was


async def test_a_name_is_found_whatever_its_case_or_accents_and_only_in_its_owners_book(db):
    store = await _people(db)
    await store.save("sam", "Zoë Martín", {"phone": "+34911234567"}, NOON)
    await store.save("bob", "Zoe Martin", {"phone": "+34911234568"}, NOON)
    [found] = await store.find("sam", "ZOE martin")
    assert (found.name, found.phone) == ("Zoë Martín", "+34911234567")
    [by_first] = await store.find("sam", "zoe")
    assert by_first.id == found.id
    assert await store.find("sam", "Bob") == []


async def test_two_anas_are_both_found_and_my_sister_finds_one_of_them(db):
    store = await _people(db)
    await store.save("sam", "Ana Lopez", {"relationship": "sister"}, NOON)
    await store.save("sam", "Ana Ruiz", {"relationship": "dentist"}, NOON)
    assert [c.name for c in await store.find("sam", "ana")] == ["Ana Lopez", "Ana Ruiz"]
    assert [c.name for c in await store.find("sam", "my sister")] == ["Ana Lopez"]
    assert [c.name for c in await store.find("sam", "Sister")] == ["Ana Lopez"]


def test_what_is_not_a_number_an_email_or_a_telegram_handle_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="is not a phone number"):
        clean_fields({"phone": "call me maybe"})
    with pytest.raises(ValueError, match="is not an email address"):
        clean_fields({"email": "ana at example"})
    with pytest.raises(ValueError, match="Telegram"):
        clean_fields({"telegram": "ana lopez"})


# --- in a conversation ----------------------------------------------------------------------


def say(app, user: str, text: str):  # type: ignore[no-untyped-def]
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text, received_at=NOON))


def results(fake_llm) -> list[str]:  # type: ignore[no-untyped-def]
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]


async def owner_app(app_factory):  # type: ignore[no-untyped-def]
    app = await app_factory(clock=FakeClock(NOON))
    return app, (await app.ensure_owner()).id


async def test_anas_number_said_in_chat_is_saved_at_once_in_e164(app_factory, fake_llm):
    app, me = await owner_app(app_factory)
    fake_llm.script(Reply(tool_calls=[ToolCall("save_contact", {
        "name": "Ana", "phone": "+1 212 555 0101", "relationship": "my sister"})]),
        Reply(content="Saved Ana."))
    reply = await say(app, me, "Ana's number is +1 212 555 0101, she's my sister")
    assert reply.text == "Saved Ana." and not reply.prompts
    [result] = results(fake_llm)
    assert result.startswith("Saved a new contact: #")
    assert result.endswith("Ana (sister) phone +12125550101")
    fake_llm.script(Reply(tool_calls=[ToolCall("find_contact", {"query": "my sister"})]),
                    Reply(content="Ana."))
    await say(app, me, "what's my sister's number?")
    assert results(fake_llm)[-1].endswith("Ana (sister) phone +12125550101")


async def test_a_contact_found_in_mail_is_saved_only_once_the_person_confirms(
        app_factory, fake_llm):
    app, me = await owner_app(app_factory)
    fake_llm.script(Reply(tool_calls=[ToolCall("propose_contact", {
        "name": "Dr Ruiz", "phone": "+34 911 234 567", "relationship": "dentist",
        "found_in": "the clinic's email of 3 May"})]))
    reply = await say(app, me, "anything in my mail?")
    [approval] = await requests_of(app, reply)
    # The card shows the details as they will be saved (checked and cleaned before asking).
    assert approval.summary == ("Save Dr Ruiz to your address book: dentist, +34911234567 "
                                "(found in the clinic's email of 3 May)")
    assert await app.services.stores.contacts.all(me) == []
    fake_llm.script(Reply(content="Saved."))
    await say(app, me, "yes")
    [saved] = await app.services.stores.contacts.all(me)
    assert (saved.name, saved.phone) == ("Dr Ruiz", "+34911234567")


async def test_deleting_a_contact_names_it_and_waits_for_a_yes(app_factory, fake_llm):
    app, me = await owner_app(app_factory)
    contacts = app.services.stores.contacts
    ana = (await contacts.save(me, "Ana", {"phone": "+12125550101"}, NOON)).contact
    fake_llm.script(Reply(tool_calls=[ToolCall("delete_contact", {"contact_id": ana.id})]))
    reply = await say(app, me, "forget Ana")
    [approval] = await requests_of(app, reply)
    assert approval.summary == f"Delete #{ana.id} Ana phone +12125550101 from your address book"
    assert await contacts.all(me) == [ana]
    fake_llm.script(Reply(content="Deleted."))
    await say(app, me, "yes")
    assert await contacts.all(me) == []


async def test_texting_someone_not_in_the_book_asks_for_their_number_and_opens_nothing(
        app_factory, fake_llm):
    app, me = await owner_app(app_factory)
    fake_llm.script(Reply(tool_calls=[ToolCall("message_someone", {
        "to": "Bob", "text": "running late"})]), Reply(content="What's Bob's number?"))
    reply = await say(app, me, "text Bob that I'm running late")
    assert reply.text == "What's Bob's number?" and not reply.prompts
    assert results(fake_llm) == [
        "Error: no contact matches 'Bob'. Nothing was sent. Ask the user for their phone "
        "number and save it with save_contact first."]
