"""Texting someone for the person: "text Ana that I'm late".

    resolve  `to` through the address book (a name, a relationship, "#12"); several matches
             or none are told to the model before anyone is asked to approve
    where    Ana's Telegram chat when she is a Valet user linked on Telegram, else an SMS
             from Valet's number to her phone
    card     who, where, and the exact text with its signature ("— from Sam, via Valet"),
             pinned into the approval's arguments: what runs is what the person saw
    check    before the card (`prepare`): one contact matches, it can be reached, the
             person's name is on record, the daily limit is not reached; else no card
    send     once, through the outbox (`messages_to_others` service, bot.gateway.others),
             keyed by the approval id; opt-outs and the daily limit refuse it (REFUSED). The
             approval follows the outbox row: a message that does not go, or whose sending
             was cut off, is told to the person (bot.approvals.effects)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.contacts.contacts import contacts_of, several
from agents.contacts.store import Contact
from agents.services import services_of
from bot.contracts.channels import ChannelTraits, for_messaging, named
from bot.contracts.tool_context import ToolExecutionContext
from bot.gateway.others import MessageEffects, SendOutcome, Sent
from bot.tools.registry import SENDS, ToolOutcome, tool

MAX_TEXT = 1000
SERVICE = "messages_to_others"
PINNED = ("recipient", "channel", "address", "message")


class MessagesToOthers(Protocol):
    """The port this tool needs (bot.gateway.others.OutboxMessenger implements it)."""

    assistant_name: str

    async def user_at(self, channel: str, address: str) -> str | None: ...

    async def chat_of(self, user_id: str, channel: str) -> str | None: ...

    async def check(self, sender_id: str, channel: str, address: str) -> Sent: ...

    async def send(self, sender_id: str, channel: str, address: str, text: str, *,
                   key: str) -> Sent: ...


@dataclass(frozen=True)
class Plan:
    recipient: str
    channel: str
    address: str
    message: str

    def where(self, channel: ChannelTraits | None) -> str:
        """How the message goes ("an SMS from Valet's number to +1...", "a Telegram
        message"); `channel`: the traits of the plan's channel (None: one Valet does not
        have, e.g. an approval stored before it was removed)."""
        if channel is None:
            return f"a message on {self.channel} to {self.address}"
        if channel.phone_numbers:
            return f"{channel.a_message} from Valet's number to {self.address}"
        return channel.a_message

    def pinned(self) -> dict[str, str]:
        return {"recipient": self.recipient, "channel": self.channel,
                "address": self.address, "message": self.message}


def messenger_of(ctx: ToolExecutionContext) -> MessagesToOthers:
    return services_of(ctx).messages_to_others


async def plan_message(ctx: ToolExecutionContext, to: str, text: str,
                       sign_as: str | None = None) -> Plan:
    """Who, where and what exactly; ValueError says what to ask the user."""
    text = text.strip()
    if not text:
        raise ValueError("the message is empty: ask the user what to say")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the message is too long (at most {MAX_TEXT} characters)")
    found = await contacts_of(ctx).find(ctx.user_id, to)
    if not found:
        raise ValueError(f"no contact matches {to!r}. Nothing was sent. Ask the user for "
                         "their phone number and save it with save_contact first.")
    if len(found) > 1:
        raise ValueError(f"{several(to, found)} Nothing was sent.")
    messenger = messenger_of(ctx)
    contact = found[0]
    channels = services_of(ctx).channels
    channel, address = await _where(messenger, contact, channels)
    plan = Plan(contact.name, channel, address,
                f"{text} — from {await _sender_name(ctx, sign_as)}, via {messenger.assistant_name}")
    check = await messenger.check(ctx.user_id, channel, address)
    if check.outcome is not SendOutcome.QUEUED:
        raise ValueError(refusal(plan, check, named(channels, channel)))
    return plan


async def _where(messenger: MessagesToOthers, contact: Contact,
                 channels: Sequence[ChannelTraits]) -> tuple[str, str]:
    """The first channel, in the messaging order, that reaches the contact: their chat on it
    when they are a Valet user linked there, their phone on one whose addresses are phone
    numbers."""
    user_id = await _valet_user(messenger, contact, channels)
    ordered = for_messaging(channels)
    for channel in ordered:
        if channel.phone_numbers:
            if contact.phone:
                return channel.name, contact.phone
        elif user_id is not None:
            chat = await messenger.chat_of(user_id, channel.name)
            if chat is not None:
                return channel.name, chat
    chats = " or ".join(c.title for c in ordered if not c.phone_numbers)
    only = f", and {chats} reaches only people who use Valet there" if chats else ""
    raise ValueError(f"{contact.name} has no phone number in the address book{only}. Nothing "
                     "was sent. Ask the user for their number.")


async def _valet_user(messenger: MessagesToOthers, contact: Contact,
                      channels: Sequence[ChannelTraits]) -> str | None:
    """The Valet user the contact is: named in the address book, else found by their id on a
    chat channel, else by their phone number."""
    found = contact.valet_user
    for name, chat_id in contact.chat_ids().items():
        found = found or await messenger.user_at(name, chat_id)
    for channel in channels:
        if found is None and contact.phone and channel.phone_numbers:
            found = await messenger.user_at(channel.name, contact.phone)
    return found


async def _sender_name(ctx: ToolExecutionContext, sign_as: str | None) -> str:
    """The person's name on record; the one they gave (`sign_as`) only when none is."""
    user = await services_of(ctx).users.get(ctx.user_id)
    name = (user.display_name if user is not None else "").strip()
    name = name or " ".join((sign_as or "").split())[:60]
    if not name:
        raise ValueError("the message is signed with the user's name, and it is not on "
                         "record. Nothing was sent. Ask the user what name to sign with and "
                         "call again with sign_as.")
    return name


def refusal(plan: Plan, sent: Sent, channel: ChannelTraits | None) -> str:
    outcome = sent.outcome
    who = f"{plan.recipient} ({plan.address})" if channel is None or channel.phone_numbers \
        else plan.recipient
    if outcome is SendOutcome.OPTED_OUT:
        return f"{who} has replied STOP to Valet's messages. Nothing was sent."
    if outcome is SendOutcome.UNREACHABLE:
        return f"{who} cannot be reached on {plan.channel}. Nothing was sent."
    if outcome is SendOutcome.NO_CHANNEL:
        return f"this server does not send {plan.channel.upper()} messages. Nothing was sent."
    if outcome is SendOutcome.DAILY_LIMIT:
        return (f"the user has sent {sent.sent_today} messages to other people in the last "
                f"24 hours, the most allowed ({sent.limit}). Nothing was sent; try again "
                "later.")
    return f"not sent ({outcome.value})."


async def deliver(ctx: ToolExecutionContext, plan: Plan) -> ToolOutcome:
    """Queue the message once for this call (the approval id when approved). Queued is done
    for now: the approval follows the outbox row and tells the person if it does not go
    (bot.gateway.others.MessageEffects)."""
    if not ctx.call_id:
        raise RuntimeError("a message to someone needs its call id (the approval's)")
    sent = await messenger_of(ctx).send(ctx.user_id, plan.channel, plan.address, plan.message,
                                        key=ctx.call_id)
    channel = named(services_of(ctx).channels, plan.channel)
    if sent.outcome is SendOutcome.ALREADY_QUEUED:
        return ToolOutcome.done(f"Already sent to {plan.recipient} before; nothing was sent "
                                "again.")
    if sent.outcome is not SendOutcome.QUEUED:
        return ToolOutcome.refused(f"Refused: {refusal(plan, sent, channel)}")
    where = plan.where(channel)
    tally = f"({sent.sent_today} of {sent.limit} messages to others today.)"
    if sent.held_until is not None:
        when = sent.held_until.astimezone(ctx.tz)
        return ToolOutcome.done(
            f"Queued for {plan.recipient} ({where}): “{plan.message}”. It goes at "
            f"{when:%H:%M} ({ctx.timezone}), when their quiet hours end. {tally}")
    return ToolOutcome.done(
        f"On its way to {plan.recipient} ({where}): “{plan.message}”. If it does not "
        f"arrive, the user is told. {tally}")


async def describe(arguments: dict[str, Any], ctx: ToolExecutionContext) -> str:
    """The approval card: who, where, and the exact text as it will be sent."""
    if not all(arguments.get(k) for k in PINNED):
        return f"Send {arguments.get('to')} a message: “{arguments.get('text')}”"
    plan = Plan(*(str(arguments[k]) for k in PINNED))
    where = plan.where(named(services_of(ctx).channels, plan.channel))
    return f"Send {plan.recipient} {where}: “{plan.message}”"


async def prepare(arguments: dict[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
    """Resolve the recipient before the approval and pin it (and the signed text)."""
    plan = await plan_message(ctx, str(arguments["to"]), str(arguments["text"]),
                              arguments.get("sign_as"))
    return {**arguments, **plan.pinned()}


async def run_approved(arguments: dict[str, Any], ctx: ToolExecutionContext) -> ToolOutcome:
    """The approved, pinned message, exactly as shown; never looked up again."""
    if not all(arguments.get(k) for k in PINNED):
        return await deliver(ctx, await plan_message(
            ctx, arguments["to"], arguments["text"], arguments.get("sign_as")))
    return await deliver(ctx, Plan(*(str(arguments[k]) for k in PINNED)))


@tool(progress="sending your message", effect=MessageEffects.key, does=SENDS)
async def message_someone(ctx: ToolExecutionContext, to: str, text: str,
                          sign_as: str | None = None) -> ToolOutcome:
    """Send someone in the user's address book a text message for the user: an SMS from
    Valet's number (or a Telegram message if they use Valet there), signed with the user's
    name. The user approves it first. If several contacts match, ask the user which one and
    call again with its number ("#12").

    Args:
        to: Who: a name ("Ana"), a relationship ("my sister") or a contact number ("#12").
        text: The message in the user's words, without a signature (it is added).
        sign_as: The user's name to sign with; only when you were told their name is not on
            record.
    """
    return await deliver(ctx, await plan_message(ctx, to, text, sign_as))


_tool = message_someone.__valet_tool__
_tool.describe, _tool.prepare, _tool.run_approved = describe, prepare, run_approved
