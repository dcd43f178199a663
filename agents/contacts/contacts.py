"""The address book's tools: save (what the person says), propose (what was found in mail or
a conversation: the person confirms), find, list, delete (the person confirms).

Two registry entries share one way of saving: `save_contact` runs at once because the person
stated it themselves; `propose_contact` is the same save behind an approval, for details the
model read somewhere else (an email signature, a forwarded message). Which one applies is the
model's call, as for every tool; the registry makes the second always ask.
"""

from __future__ import annotations

from typing import Any

from agents.contacts.store import Contact, ContactStore, Saved, clean_fields
from agents.services import services_of
from bot.contracts.tool_context import ToolExecutionContext
from bot.tools.registry import CHANGES, READS, ToolOutcome, tool
from persona.catalog import say


def contacts_of(ctx: ToolExecutionContext) -> ContactStore:
    return services_of(ctx).stores.contacts


def several(query: str, found: list[Contact]) -> str:
    """What the model is told when a name means more than one contact."""
    listed = "\n".join(c.line() for c in found)
    return (f"Several contacts match {query!r}:\n{listed}\nAsk the user which one they mean; "
            "then use its number (e.g. '#" + str(found[0].id) + "').")


async def _save(ctx: ToolExecutionContext, name: str, given: dict[str, str | None]) -> str:
    values = clean_fields(given)  # ValueError: the model is told what to fix
    saved = await contacts_of(ctx).save(ctx.user_id, name, values, ctx.clock.now())
    return said(saved)


def said(saved: Saved) -> str:
    contact = saved.contact
    if saved.created:
        return f"Saved a new contact: {contact.line()}"
    if not saved.changed:
        return f"Nothing changed: {contact.line()}"
    return f"Updated {contact.name} ({'; '.join(saved.changed)}): {contact.line()}"


@tool(progress="saving the contact", does=CHANGES)
async def save_contact(ctx: ToolExecutionContext, name: str, relationship: str | None = None,
                       phone: str | None = None, email: str | None = None,
                       telegram: str | None = None, notes: str | None = None) -> str:
    """Save someone in the user's address book, or change the given details of the contact
    with that name. Only for what the user tells you themselves ("Ana's number is ...", "my
    sister is Ana"); for details you found in mail, a web page or someone else's message, use
    propose_contact. Leave out what you were not told.

    Args:
        name: The person's name as the user calls them ("Ana", "Ana Lopez").
        relationship: Who they are to the user ("sister", "dentist", "boss").
        phone: Their phone number with the country code ("+1 212 555 0199").
        email: Their email address.
        telegram: Their Telegram @username, or their Valet user id.
        notes: Anything else worth keeping about them.
    """
    return await _save(ctx, name, {"relationship": relationship, "phone": phone,
                                   "email": email, "telegram": telegram, "notes": notes})


def _summarize_proposal(arguments: dict[str, Any]) -> str:
    shown = ", ".join(str(arguments[k]) for k in
                      ("relationship", "phone", "email", "telegram", "notes") if arguments.get(k))
    where = say("card_contact_found", found_in=arguments["found_in"]) \
        if arguments.get("found_in") else ""
    return say("card_contact_save", name=arguments.get("name"),
               details=shown or say("card_contact_no_details"), found=where)


async def check_proposal(arguments: dict[str, Any], ctx: ToolExecutionContext
                         ) -> dict[str, Any]:
    """Before asking: the details are ones the address book takes (a phone number, an email,
    a Telegram handle), cleaned as they will be saved."""
    fields = ("relationship", "phone", "email", "telegram", "notes")
    cleaned = clean_fields({k: arguments.get(k) for k in fields})  # ValueError: what to fix
    if not str(arguments.get("name") or "").strip():
        raise ValueError("the contact needs a name")
    return {**arguments, **{k: cleaned.get(k) for k in fields}}


@tool(progress="saving the contact", prepare=check_proposal, does=CHANGES)
async def propose_contact(ctx: ToolExecutionContext, name: str, found_in: str,
                          relationship: str | None = None, phone: str | None = None,
                          email: str | None = None, telegram: str | None = None,
                          notes: str | None = None) -> str:
    """Offer to save a contact's details you found in mail, a document or a conversation with
    someone else (not stated by the user): the user is asked to confirm before it is saved.

    Args:
        name: The person's name.
        found_in: Where you found the details ("Ana's email of 3 May").
        relationship: Who they are to the user, if known.
        phone: Their phone number with the country code.
        email: Their email address.
        telegram: Their Telegram @username.
        notes: Anything else worth keeping.
    """
    return await _save(ctx, name, {"relationship": relationship, "phone": phone,
                                   "email": email, "telegram": telegram, "notes": notes})


propose_contact.__valet_tool__.summarize = _summarize_proposal


@tool(progress="looking in your address book", safe_to_repeat=True, does=READS)
async def find_contact(ctx: ToolExecutionContext, query: str) -> str:
    """Find contacts in the user's address book by name ("Ana"), relationship ("my sister")
    or number ("#12"). Case and accents do not matter.

    Args:
        query: A name, a relationship or a contact number.
    """
    found = await contacts_of(ctx).find(ctx.user_id, query)
    if not found:
        return f"No contact matches {query!r}."
    if len(found) > 1:
        return several(query, found)
    return found[0].line()


@tool(progress="reading your address book", safe_to_repeat=True, does=READS)
async def list_contacts(ctx: ToolExecutionContext, limit: int = 50) -> str:
    """List the user's address book, by name.

    Args:
        limit: How many contacts to show at most (1-200).
    """
    contacts = await contacts_of(ctx).all(ctx.user_id)
    if not contacts:
        return "The address book is empty."
    shown = contacts[:max(1, min(limit, 200))]
    more = len(contacts) - len(shown)
    return "\n".join(c.line() for c in shown) + (f"\n(and {more} more)" if more else "")


async def describe_delete(arguments: dict[str, Any], ctx: ToolExecutionContext) -> str:
    """The approval card names the contact and its details."""
    contact = await contacts_of(ctx).get(ctx.user_id, int(arguments["contact_id"]))
    if contact is None:
        return f"Delete contact #{arguments['contact_id']} (there is no such contact)"
    return f"Delete {contact.line()} from your address book"


async def check_delete(arguments: dict[str, Any], ctx: ToolExecutionContext
                       ) -> dict[str, Any]:
    """Before asking: the contact exists."""
    if await contacts_of(ctx).get(ctx.user_id, int(arguments["contact_id"])) is None:
        raise ValueError(f"there is no contact #{arguments['contact_id']} (find_contact shows "
                         "their numbers). Nothing was deleted and the user was not asked.")
    return arguments


@tool(progress="deleting the contact", describe=describe_delete, prepare=check_delete, does=CHANGES)
async def delete_contact(ctx: ToolExecutionContext, contact_id: int) -> ToolOutcome:
    """Delete a contact from the user's address book for good, by its number (#12 -> 12).
    Look the number up with find_contact first.

    Args:
        contact_id: The contact's number.
    """
    contact = await contacts_of(ctx).delete(ctx.user_id, contact_id)
    if contact is None:  # gone since the user was asked
        return ToolOutcome.refused(f"Refused: there is no contact #{contact_id} any more; "
                                   "nothing was deleted.")
    return ToolOutcome.done(f"Deleted {contact.name} from the address book.")
