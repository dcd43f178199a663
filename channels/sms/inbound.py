"""An incoming SMS, from Twilio's form to the gateway's door.

Handled here, never reaching the LLM: STOP and its synonyms (the number is opted out),
START/UNSTOP (back in), HELP/INFO (a short help text), a message with only a picture (one
polite sentence), and anything from a number that said STOP. These are still written to the
inbox first, so a retried webhook (same MessageSid) is a duplicate there as everywhere else.

Translated on the way: "LINK 4K7M2Q" -> "/link 4K7M2Q" (and "LINK" -> "/link"); a bare "1"
or "2" answering the one approval prompt in the last message this number got -> a decision
bound to that request.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bot.approvals.options import Option
from bot.clock import Clock
from bot.db import Database
from bot.envelopes import ButtonPress, IncomingMessage
from bot.gateway.identity import Identity, IdentityStore
from bot.gateway.inbox import InboxStore
from bot.gateway.outbox import OutboxStore
from bot.phones import normalize_or_keep

log = logging.getLogger(__name__)

CHANNEL = "sms"
STOP_WORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT",
                        "REVOKE"})
START_WORDS = frozenset({"START", "UNSTOP"})
HELP_WORDS = frozenset({"HELP", "INFO"})
_LINK = re.compile(r"^\s*link(?:\s+([A-Za-z0-9]{4,12}))?\s*$", re.IGNORECASE)
_CHOICE = re.compile(r"^\s*([12])\s*[.!]?\s*$")


class Door(Protocol):
    """The gateway's entrance: durable (inbox) when it returns."""

    async def receive(self, msg: IncomingMessage) -> Any: ...


@dataclass(frozen=True)
class SmsLines:
    help: str = ("This is Valet, a personal assistant. Text me what you need. Reply STOP to "
                 "stop messages, START to get them again.")
    picture_only: str = ("I can't open pictures or attachments by text message yet. Could "
                         "you tell me in words?")
    picture_too: str = ("I can't open pictures or attachments by text message yet, so I only "
                        "read your text.")


def keyword(text: str) -> str | None:
    """The carrier keyword the whole message is ("stop", " Stop. "), if it is one."""
    word = text.strip().strip(".!").strip().upper()
    return word if word in STOP_WORDS | START_WORDS | HELP_WORDS else None


class SmsInbound:
    def __init__(self, *, door: Door, db: Database, identities: IdentityStore,
                 inbox: InboxStore, outbox: OutboxStore, clock: Clock,
                 wake_delivery: Callable[[], None], default_region: str | None = None,
                 lines: SmsLines | None = None) -> None:
        self.door = door
        self.db = db
        self.identities = identities
        self.inbox = inbox
        self.outbox = outbox
        self.clock = clock
        self.wake_delivery = wake_delivery
        self.default_region = default_region
        self.lines = lines or SmsLines()

    async def handle(self, form: Mapping[str, str]) -> None:
        """Everything to do before Twilio is answered: when this returns, the message is
        durable (or was seen before)."""
        sid = form.get("MessageSid") or form.get("SmsSid") or ""
        if not sid:
            log.warning("SMS webhook without a MessageSid: ignored")
            return
        address = normalize_or_keep(form.get("From", ""), self.default_region)
        body = form.get("Body", "")
        media = _count(form.get("NumMedia"))
        msg = IncomingMessage(channel=CHANNEL, address=address, external_id=sid, text=body,
                              received_at=self.clock.now())
        identity = await self.identities.get(CHANNEL, address)
        word = keyword(body)
        if word in STOP_WORDS:
            await self._opt_out(msg, identity)
        elif word in START_WORDS:
            await self._opt_in(msg, identity)
        elif identity is None:
            await self.door.receive(_translated_link(msg))  # the access policy decides
        elif identity.opted_out_at is not None:
            await self._at_the_door(msg, identity, None, status="rejected")
        elif word in HELP_WORDS:
            await self._at_the_door(msg, identity, self.lines.help)
        elif media and not body.strip():
            await self._at_the_door(msg, identity, self.lines.picture_only)
        else:
            if identity.unreachable_at is not None:  # they wrote: reachable again
                await self.identities.set_unreachable(CHANNEL, address, False)
            if media:
                await self._tell(identity, self.lines.picture_too, f"sms-media:{sid}")
            await self.door.receive(await self._translated(msg))

    async def _translated(self, msg: IncomingMessage) -> IncomingMessage:
        msg = _translated_link(msg)
        choice = _CHOICE.match(msg.text)
        if choice is None:
            return msg
        last = await self.outbox.latest_to(CHANNEL, msg.address)
        option = Option.parse(choice.group(1))
        if last is None or len(last.prompts) != 1 or option is None:
            return msg  # "1" answers something else (a question, a list): plain text
        [prompt] = last.prompts
        return IncomingMessage(msg.channel, msg.address, msg.external_id, msg.text,
                               msg.received_at, button=ButtonPress(prompt.id, option.value,
                                                                   kind=prompt.kind))

    # --- answered here -------------------------------------------------------------------------

    async def _opt_out(self, msg: IncomingMessage, identity: Identity | None) -> None:
        # Twilio (or the carrier) confirms the opt-out itself; a reply would be refused.
        # A number that is nobody's is remembered too: someone a person had Valet text.
        await self.identities.set_opted_out(CHANNEL, msg.address, True, at=msg.received_at)
        log.info("sms %s opted out (%s)", msg.address, msg.text.strip())
        await self._at_the_door(msg, identity, None)

    async def _opt_in(self, msg: IncomingMessage, identity: Identity | None) -> None:
        await self.identities.set_opted_out(CHANNEL, msg.address, False)
        if identity is not None:
            await self.identities.set_unreachable(CHANNEL, msg.address, False)
        log.info("sms %s opted back in", msg.address)
        await self._at_the_door(msg, identity, None)

    async def _at_the_door(self, msg: IncomingMessage, identity: Identity | None,
                           reply: str | None, *, status: str = "done") -> None:
        """Recorded in the inbox (a retry is a duplicate), answered with at most one fixed
        line, and closed: no turn, no LLM."""
        row_id = await self.inbox.record(msg)
        if row_id is None:
            return
        user_id = identity.user_id if identity else None
        if user_id:
            await self.inbox.assign(row_id, user_id)
        at = self.clock.now()
        async with self.db.transaction() as tx:
            if reply and user_id:
                await self.outbox.enqueue(tx, dedupe_key=f"reply:{row_id}", user_id=user_id,
                                          channel=CHANNEL, address=msg.address, text=reply,
                                          at=at)
            await self.inbox.close(tx, row_id, status, at)
        if reply:
            self.wake_delivery()

    async def _tell(self, identity: Identity, text: str, dedupe_key: str) -> None:
        await self.outbox.enqueue(self.db, dedupe_key=dedupe_key, user_id=identity.user_id,
                                  channel=CHANNEL, address=identity.address, text=text,
                                  at=self.clock.now())
        self.wake_delivery()


def _translated_link(msg: IncomingMessage) -> IncomingMessage:
    link = _LINK.match(msg.text)
    if link is None:
        return msg
    command = f"/link {link.group(1)}" if link.group(1) else "/link"
    return IncomingMessage(msg.channel, msg.address, msg.external_id, command, msg.received_at)


def _count(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0
