"""Sending SMS through Twilio's REST API (channels.twilio.rest): the `ChannelSender` the
outbox delivers through.

Nothing is sent that the meter (bot.meter.gate) did not let out: it has the message's price
from `quote` and counts it before it goes. Nothing goes to a number outside
`sms.allowed_countries`, whatever asked for it (refused as a permanent failure: the number is
marked unreachable). Every SMS is held to `sms.max_segments`, whatever it carries
(channels.sms.cut): what does not fit is kept for the person's "MORE" (SmsStore.keep_rest).
Each part Twilio accepts is recorded (`sms_parts`) with its cost before the next is sent, so a
retry after a failure part-way sends only what is missing. Errors become the channel port's
two kinds: worth retrying (429, 5xx, network) or not (opted out, invalid number, any other 4xx).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twilio.base.exceptions import TwilioException

from bot.budget import micros
from bot.channel import Brevity, ChannelSender, PermanentSendError, Quote
from bot.contracts.clock import Clock
from bot.contracts.envelopes import OutboundMessage
from bot.meter.ledger import Ledger
from bot.people.identity import IdentityStore
from channels.sms.gsm import MULTI_GSM
from channels.sms.plain_letters import plain_letters_setting
from channels.sms.render import SmsBody, render_capped, segments_of
from channels.sms.store import SmsStore
from channels.sms.traits import TRAITS
from channels.twilio.rest import TwilioAccount, client_for, permanent
from persona.lines_channels import SmsLines

log = logging.getLogger(__name__)

__all__ = ["SmsSender", "TwilioAccount"]


class SmsSender(ChannelSender):
    traits = TRAITS

    def __init__(self, account: TwilioAccount, *, store: SmsStore, identities: IdentityStore,
                 clock: Clock, lines: SmsLines, emoji: bool = False,
                 summary_max_segments: int = 2, max_segments: int = 3,
                 may_send: Callable[[str], bool] = lambda number: False,
                 ledger: Ledger | None = None,
                 price: Callable[[str], float] = lambda number: 0.0,
                 plain_letters: bool | None = None) -> None:
        if not (account.from_number or account.messaging_service_sid):
            raise ValueError("SMS needs sms.from_number or sms.messaging_service_sid")
        self.account = account
        self.client, self.http = client_for(account)
        self.store = store
        self.identities = identities
        self.clock = clock
        self.emoji = emoji
        self.plain_letters = plain_letters  # sms.plain_letters (None: by the reader's language)
        # A triggered run's reply (the morning summary) fits this many segments.
        brief = Brevity(lambda text: segments_of(text, emoji=emoji) <= summary_max_segments,
                        about_chars=summary_max_segments * MULTI_GSM)
        # A reply longer than max_segments gets one shortening pass; what still does not fit
        # is cut here when it is sent, the rest kept for "MORE".
        reply = Brevity(lambda text: segments_of(text, emoji=emoji) <= max_segments,
                        about_chars=max_segments * MULTI_GSM)
        self._brevity = {True: brief, False: reply}
        self.lines = lines  # how a prompt asks for its answer, how to get the rest
        self.max_segments = max_segments
        self.summary_max_segments = summary_max_segments
        self.may_send = may_send  # the number's country is allowed (sms.allowed_countries)
        # The meter's ledger: a message it did not let out (bot.meter.gate) is never sent.
        # None: a sender built without the meter (a test of rendering alone).
        self.ledger = ledger
        self.price = price  # a segment's, by number

    async def close(self) -> None:
        await self.http.close()

    def brevity(self, *, triggered: bool) -> Brevity:
        return self._brevity[triggered]

    async def quote(self, message: OutboundMessage) -> Quote:
        """What the message costs if it is sent now (bot.meter.gate counts it before it goes):
        nothing for a number it will not go to."""
        if not self.may_send(message.address) \
                or await self.identities.opted_out("sms", message.address):
            return Quote(parts=0)
        bodies, _rest = self._render(message)
        segments = sum(b.segments for b in bodies[message.parts_sent:])
        return Quote(len(bodies), segments, micros(segments * self.price(message.address)))

    def _render(self, message: OutboundMessage) -> tuple[list[SmsBody], str]:
        """The message as it goes (quoted and sent alike): cut to the cap, in plain letters
        where sms.plain_letters or the reader's language wants them."""
        with plain_letters_setting(self.plain_letters):
            return render_capped(message, max_segments=self.max_segments, emoji=self.emoji,
                                 lines=self.lines)

    async def send(self, message: OutboundMessage) -> str | None:
        if self.ledger is not None and not await self.ledger.admitted(message.id):
            raise PermanentSendError(f"outbox {message.id} was not let out by the meter: "
                                     "not sent")
        if await self.identities.opted_out("sms", message.address):
            raise PermanentSendError(f"{message.address} opted out (STOP): not sent",
                                     opted_out=True)
        if not self.may_send(message.address):
            raise PermanentSendError(f"{message.address} is in no country of "
                                     "sms.allowed_countries: not sent", unreachable=True)
        bodies, rest = self._render(message)
        if not bodies:
            return None
        already = await self.store.accepted(message.id)
        sids = []
        for part, body in enumerate(bodies):
            sid = already.get(part) or await self._create(message, part, body)
            sids.append(sid)
        if rest:  # the person asks for it with "MORE" (channels.sms.inbound)
            await self.store.keep_rest(message.address, message.id, rest, self.clock.now())
        return ",".join(sids)

    async def _create(self, message: OutboundMessage, part: int, body: SmsBody) -> str:
        kwargs: dict[str, Any] = {"to": message.address, "body": body.text}
        if self.account.from_number:
            kwargs["from_"] = self.account.from_number
        else:
            kwargs["messaging_service_sid"] = self.account.messaging_service_sid
        if self.account.status_callback_url:
            kwargs["status_callback"] = f"{self.account.status_callback_url}?outbox={message.id}"
        try:
            created = await self.client.messages.create_async(**kwargs)
        except TwilioException as err:
            raise permanent(err) from err
        sid = str(created.sid)
        await self.store.record(message.id, part, sid, body.segments, body.encoding.value,
                                self.clock.now())
        await self.store.add_cost(message.id, body.segments, body.encoding.value)
        log.info("sms %s part %d to %s: %s, %d segment(s) %s", message.id, part,
                 message.address, sid, body.segments, body.encoding.value)
        return sid
