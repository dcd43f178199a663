"""Sending on WhatsApp through Twilio's REST API: the `Channel` the outbox delivers through.

Nothing is sent that the meter (bot.meter.gate) did not let out: `quote` prices the row as it
will go. WhatsApp is priced per message, not per segment: each message Twilio accepts costs
`whatsapp.price_per_message` (Twilio's fee; a session message carries no Meta fee), a
template `whatsapp.price_per_template` (Twilio's fee and Meta's, an estimate); a row that
goes to another channel costs nothing here (that channel's own message is metered when it
goes). How a row goes (the text and its cards, a template, or elsewhere) is decided by the
24-hour window (channels.whatsapp.window). Each message Twilio accepts is recorded before the
next is sent, so a retry after a failure part-way sends only what is missing. A 63016 ("outside
the allowed window") is never a silent loss: in Twilio's answer or in the status callback, the
window is marked closed and the row goes again, by template or on the person's other channel.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from twilio.base.exceptions import TwilioException

from bot.budget import micros
from bot.channel import ChannelSender, PermanentSendError, Quote
from bot.contracts.clock import Clock
from bot.contracts.envelopes import MediaRef, OutboundMessage
from bot.gateway.door import Door
from bot.meter.ledger import Ledger
from bot.people.identity import IdentityStore
from channels.plain_cards import cards_in_words
from channels.twilio.rest import TwilioAccount, client_for, permanent
from channels.whatsapp.cards import QuickReplies
from channels.whatsapp.lines import WhatsAppLines
from channels.whatsapp.media import MediaFetcher
from channels.whatsapp.store import WhatsAppStore
from channels.whatsapp.traits import NAME, TRAITS
from channels.whatsapp.window import Piece, by_template, in_session, is_open, template_kind
from channels.whatsapp.wire import on_wire
from persona.lines import Lines, fill

log = logging.getLogger(__name__)

WINDOW_CLOSED = 63016  # "Failed to send freeform message because you are outside the allowed
#                        window. If you are using WhatsApp, please use a Message Template."
# The parts of a row sent again after a 63016 are numbered from here: a second report of the
# same refusal finds them sent.
AGAIN = 1000
TITLE = "WhatsApp"


class WindowClosed(Exception):
    """Twilio refused a free-form message: the person's window is closed."""


class WhatsAppSender(ChannelSender):
    traits = TRAITS

    def __init__(self, account: TwilioAccount, *, store: WhatsAppStore,
                 identities: IdentityStore, door: Door, clock: Clock, lines: Lines,
                 words: WhatsAppLines, templates: dict[str, str], buttons: bool = True,
                 ledger: Ledger | None = None, price_per_message: float = 0.0,
                 price_per_template: float = 0.0) -> None:
        if not (account.from_number or account.messaging_service_sid):
            raise ValueError("WhatsApp needs whatsapp.from_number or "
                             "whatsapp.messaging_service_sid")
        self.account = account
        self.client, self.http = client_for(account)
        self.store = store
        self.identities = identities
        self.door = door
        self.clock = clock
        self.lines = lines  # the persona's: cards in words, shared with other channels
        self.words = words  # its own (channels/whatsapp/lines.py), as the persona says them
        self.templates = dict(templates)
        self.cards = QuickReplies(self.client, self.words) if buttons else None
        self.media = MediaFetcher(account)
        # The meter's ledger: a row it did not let out is never sent (None: not metered).
        self.ledger = ledger
        self.price_per_message = price_per_message
        self.price_per_template = price_per_template

    async def close(self) -> None:
        await self.http.close()
        await self.media.close()

    # --- what goes, and what it costs ---------------------------------------------------

    async def plan(self, message: OutboundMessage) -> list[Piece] | None:
        """The messages this row becomes now; None: outside the window with no template
        (it goes to the person's other channel)."""
        last, closed = await self.store.window(message.address)
        if is_open(last, closed, self.clock.now()):
            card_sid = await self.cards.sid() if self.cards and message.prompts else None
            return in_session(message, self.lines, card_sid)
        return self._outside(message)

    def _outside(self, message: OutboundMessage) -> list[Piece] | None:
        sid = self.templates.get(template_kind(message))
        return by_template(message, self.lines, sid) if sid else None

    async def quote(self, message: OutboundMessage) -> Quote:
        """What the row costs if it is sent now (bot.meter.gate counts it before it goes)."""
        if await self.identities.opted_out(NAME, message.address):
            return Quote(parts=0)
        pieces = await self.plan(message)
        if not pieces:
            return Quote(parts=0)
        price = sum(self.price_per_template if p.form == "template" else self.price_per_message
                    for p in pieces)
        return Quote(len(pieces), len(pieces), micros(price))

    # --- sending ------------------------------------------------------------------------

    async def send(self, message: OutboundMessage) -> str | None:
        if self.ledger is not None and not await self.ledger.admitted(message.id):
            raise PermanentSendError(f"outbox {message.id} was not let out by the meter: "
                                     "not sent")
        if await self.identities.opted_out(NAME, message.address):
            raise PermanentSendError(f"{message.address} opted out: not sent", opted_out=True)
        pieces = await self.plan(message)
        try:
            return await self._send(message, pieces, first=0)
        except WindowClosed:
            await self.store.closed(message.address, self.clock.now())
            return await self._send(message, self._outside(message), first=AGAIN)

    async def window_closed(self, outbox_id: int, failed_sid: str) -> None:
        """A status callback said 63016 for a message Valet thought inside the window: the
        window is closed, and the row goes again (by template, else on another channel; a
        template refused so goes on another channel)."""
        message = await self.store.message(outbox_id)
        if message is None:
            log.warning("whatsapp: 63016 for outbox %s, which is not a WhatsApp row",
                        outbox_id)
            return
        await self.store.closed(message.address, self.clock.now())
        sent = await self.store.accepted(outbox_id)
        again = [part for part, sid in sent.items() if sid == failed_sid and part >= AGAIN]
        pieces = None if again else self._outside(message)
        log.warning("whatsapp outbox %s to %s: outside the 24-hour window (63016): sent "
                    "again %s", outbox_id, message.address,
                    "by template" if pieces else "on another channel")
        try:
            await self._send(message, pieces, first=AGAIN if pieces else 2 * AGAIN)
        except (PermanentSendError, WindowClosed) as err:
            # Never a silent loss: the row Twilio took is dead with why, where lost messages
            # are seen (the console's dead letters, /metrics' dead letters by channel).
            await self.door.undelivered(outbox_id, f"refused by WhatsApp after it was taken "
                                        f"(63016, outside the 24-hour window); {err}")

    async def _send(self, message: OutboundMessage, pieces: list[Piece] | None, *,
                    first: int) -> str | None:
        if pieces is None:
            return await self._elsewhere(message)
        already = await self.store.accepted(message.id)
        sids = []
        for i, piece in enumerate(pieces):
            part = first + i
            sids.append(already.get(part) or await self._create(message, part, piece))
        return ",".join(sids) or None

    async def _create(self, message: OutboundMessage, part: int, piece: Piece) -> str:
        kwargs: dict[str, Any] = {"to": on_wire(message.address)}
        if self.account.from_number:
            kwargs["from_"] = on_wire(self.account.from_number)
        else:
            kwargs["messaging_service_sid"] = self.account.messaging_service_sid
        if piece.content_sid:
            kwargs["content_sid"] = piece.content_sid
            kwargs["content_variables"] = json.dumps(piece.variables, ensure_ascii=False)
        else:
            kwargs["body"] = piece.body
        if self.account.status_callback_url:
            kwargs["status_callback"] = f"{self.account.status_callback_url}?outbox={message.id}"
        try:
            created = await self.client.messages.create_async(**kwargs)
        except TwilioException as err:
            if getattr(err, "code", None) == WINDOW_CLOSED and piece.form != "template":
                raise WindowClosed(str(err)) from err
            raise permanent(err, unreachable_what="not a WhatsApp number") from err
        sid = str(created.sid)
        await self.store.record(message.id, part, sid, piece.form, self.clock.now())
        log.info("whatsapp %s part %d to %s: %s (%s)", message.id, part, message.address,
                 sid, piece.form)
        return sid

    async def _elsewhere(self, message: OutboundMessage) -> str:
        """Outside the window with no template: on the person's other channel, with a line
        saying why it came there (once per row: the door dedupes on the key)."""
        kind = template_kind(message)
        others = [i for i in await self.identities.of_user(message.user_id or "")
                  if i.channel not in (NAME, "console") and i.writable] \
            if message.user_id else []
        if not others:
            raise PermanentSendError(
                f"outside WhatsApp's 24-hour window, no template for it "
                f"(whatsapp.templates.{kind}) and no other channel reaches the person: not "
                "sent")
        other = others[0]
        said = [fill(self.words.whatsapp_elsewhere, channel=TITLE), message.text]
        if message.prompts:
            said.append(cards_in_words(message.prompts, self.lines))
        await self.door.answer_directly(other.channel, other.address,
                                        "\n\n".join(s for s in said if s.strip()),
                                        dedupe_key=f"whatsapp-elsewhere:{message.id}",
                                        user_id=message.user_id)
        log.info("whatsapp outbox %s: outside the 24-hour window, no template for %s: sent "
                 "on %s", message.id, kind, other.channel)
        return f"elsewhere:{other.channel}"

    # --- media (traits.media: fetched when the turn runs) -----------------------------

    async def fetch_media(self, ref: MediaRef) -> bytes:
        return await self.media.fetch(ref)

    # --- a press of a card's button -----------------------------------------------------

    async def answer_button(self, answer_ref: str, text: str) -> None:
        """Nothing at once: a press on WhatsApp is a message, answered by the turn's reply
        (which the meter counts); a second message to acknowledge it would cost again."""
