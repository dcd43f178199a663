"""An incoming SMS, from Twilio's form to the gateway's door.

Handled here, never reaching the LLM: STOP and its synonyms (the number is opted out),
START/UNSTOP (back in), HELP/INFO (a short help text), a message with only a picture (one
polite sentence), "MORE" (or the persona's synonyms, `sms_more_words`) while the rest of a
long message waits (the next part), and anything from a number that said STOP. These are
still written to the inbox first, so a retried webhook (same MessageSid) is a duplicate there
as everywhere else. Anything else a person sends drops what was left of a long message.

Translated on the way: "LINK 4K7M2Q" -> "/link 4K7M2Q" (and "LINK" -> "/link"); a bare "1"
or "2" -> a choice (approve, cancel) that the gateway binds to the one approval prompt in the
last message this number got.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from bot.contracts.envelopes import IncomingMessage
from bot.contracts.options import Option
from bot.gateway.door import ChannelHost, Said
from bot.people.identity import Identity
from bot.text.phones import normalize_or_keep
from channels.sms.store import SmsStore
from persona.lines_channels import SmsLines

log = logging.getLogger(__name__)

CHANNEL = "sms"
STOP_WORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT",
                        "REVOKE"})
START_WORDS = frozenset({"START", "UNSTOP"})
HELP_WORDS = frozenset({"HELP", "INFO"})
_LINK = re.compile(r"^\s*link(?:\s+([A-Za-z0-9]{4,12}))?\s*$", re.IGNORECASE)
_CHOICE = re.compile(r"^\s*([12])\s*[.!]?\s*$")


def keyword(text: str) -> str | None:
    """The carrier keyword the whole message is ("stop", " Stop. "), if it is one."""
    word = text.strip().strip(".!").strip().upper()
    return word if word in STOP_WORDS | START_WORDS | HELP_WORDS else None


def more_words(lines: SmsLines) -> frozenset[str]:
    """What asks for the rest of a long message: MORE and the persona's words."""
    return frozenset({"MORE", *(" ".join(w.split()).upper()
                                for w in lines.sms_more_words.split(",") if w.strip())})


class SmsInbound:
    def __init__(self, host: ChannelHost, store: SmsStore, *,
                 default_region: str | None = None) -> None:
        self.door = host.door
        self.identities = host.identities
        self.clock = host.clock
        self.default_region = default_region
        self.lines: SmsLines = host.lines
        self.store = store
        self.more = more_words(host.lines)

    async def handle(self, form: Mapping[str, str], *,
                     received_at: datetime | None = None) -> None:
        """Everything to do before Twilio is answered: when this returns, the message is
        durable (or was seen before). `received_at`: when the webhook came (a message kept in
        the spool while the database was away is stored later, bot.plumbing.spool)."""
        sid = form.get("MessageSid") or form.get("SmsSid") or ""
        if not sid:
            log.warning("SMS webhook without a MessageSid: ignored")
            return
        address = normalize_or_keep(form.get("From", ""), self.default_region)
        body = form.get("Body", "")
        media = _count(form.get("NumMedia"))
        msg = IncomingMessage(channel=CHANNEL, address=address, external_id=sid, text=body,
                              received_at=received_at or self.clock.now())
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
            await self._at_the_door(msg, identity, lambda: self.lines.sms_help, kind="door:help")
        elif media and not body.strip():
            await self._at_the_door(msg, identity, lambda: self.lines.sms_picture_only,
                                    kind="door:picture")
        elif not await self._more(msg, identity):
            if media:  # the gateway marks the identity reachable again: they wrote
                await self.door.answer_directly(CHANNEL, address,
                                                lambda: self.lines.sms_picture_too,
                                                dedupe_key=f"sms-media:{sid}",
                                                user_id=identity.user_id,
                                                kind="door:picture_too")
            await self.door.receive(_translated(msg))

    async def _more(self, msg: IncomingMessage, identity: Identity) -> bool:
        """ "MORE" while the rest of a long message waits: the next part, with no turn and no
        LLM (it is held to the same segments, so a long rest comes in several). Anything
        else drops the rest: a new request starts afresh."""
        asked = " ".join(msg.text.strip().strip(".!?").split()).upper()
        if asked not in self.more:
            await self.store.drop_rest(msg.address)
            return False
        rest = await self.store.take_rest(msg.address)
        if rest is None:
            return False  # nothing waits: the words go to the conversation as they are
        await self._at_the_door(msg, identity, rest, kind="door:more")
        return True

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
                           reply: Said | None, *, status: str = "done",
                           kind: str = "reply") -> None:
        """No turn, no LLM: the gateway records it, gives the fixed line (to a known number
        only) and closes it. The line passes the meter like any message (bot.meter.gate): a
        blocked person gets none, and one of a `kind` goes at most once a while."""
        user_id = identity.user_id if identity else None
        await self.door.answer_at_the_door(msg, reply if user_id else None, user_id=user_id,
                                           status=status, kind=kind)


def _translated(msg: IncomingMessage) -> IncomingMessage:
    """ "LINK CODE" as the /link command; a bare 1 or 2 as the option it picks."""
    msg = _translated_link(msg)
    choice = _CHOICE.match(msg.text)
    if choice is None:
        return msg
    option = Option.parse(choice.group(1))
    return replace(msg, choice=option) if option is not None else msg


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
