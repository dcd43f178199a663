"""The gateway's doors that start no turn: fixed answers, messages given up, strangers sent away.

A channel answers some messages itself (STOP, HELP, a picture alone), gives up on one that
keeps failing, and has a button press acknowledged at once; the access policy turns some
senders away at the door. Each is recorded in the inbox and closed the one way a row ends
(the gateway's `close`, handed in); none reaches the LLM. `Gateway` (bot.gateway.gateway)
holds these doors and opens them to the channels (bot.gateway.door.Door).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.contracts.clock import Clock
from bot.contracts.envelopes import ButtonPress, IncomingMessage, Reply
from bot.contracts.people import User
from bot.gateway.deps import ButtonAnswer, Line
from bot.gateway.door import Said
from bot.gateway.inbox import InboxStore
from bot.gateway.outbound import Outbound
from bot.gateway.pairing_notices import PairingNotices
from bot.people.access import Admission
from bot.people.identity import IdentityStore
from bot.text.sanitize import clean_incoming
from persona.speaking import speaking_to

log = logging.getLogger(__name__)

# The one way an inbox row ends (Gateway.close): its reply queued and the row closed together.
CloseRow = Callable[..., Awaitable[None]]


class SideDoors:
    """The doors of bot.gateway.door.Door besides `receive`, and a stranger's close at the
    door, on what they are handed."""

    def __init__(self, *, inbox: InboxStore, identities: IdentityStore, clock: Clock,
                 outbound: Outbound, close: CloseRow, unreadable_line: Line,
                 answer_button: ButtonAnswer | None = None,
                 pairing_notices: PairingNotices | None = None) -> None:
        self.inbox = inbox
        self.identities = identities
        self.clock = clock
        self.outbound = outbound
        self._close = close
        self.unreadable_line = unreadable_line  # said once to the sender of a message given up
        self.answers_button = answer_button  # the short answer to a press (bot.approvals.buttons)
        self.pairing_notices = pairing_notices  # the owner told of new pairing requests

    async def answer_button(self, channel: str, user: User, button: ButtonPress) -> None:
        """A button press is acknowledged at once, whatever the turn does next."""
        sender = self.outbound.sender(channel)
        if sender is None or not sender.traits.buttons or self.answers_button is None:
            return
        try:
            said = await self.answers_button(user, button)
            await sender.answer_button(button.answer_ref, said)
        except Exception:  # the press is stored and will be decided; only the toast failed
            log.warning("answering a %s button press failed", channel, exc_info=True)

    async def worded(self, said: Said, channel: str, address: str) -> str:
        """A channel's own words, in the language of the person at `address` (the
        persona's for a stranger)."""
        if isinstance(said, str):
            return said
        user = await self.identities.resolve(channel, address) if address else None
        with speaking_to(user.language if user is not None else None):
            return said()

    async def answer_at_the_door(self, msg: IncomingMessage, reply: Said | None, *,
                                 user_id: str | None, status: str = "done",
                                 kind: str = "reply") -> bool:
        """A message a channel answers itself (STOP, HELP, a picture alone): recorded in the
        inbox first (a redelivery is a duplicate, answered once), answered with at most one
        fixed line, and closed: no turn, no LLM. False for a duplicate."""
        msg = clean_incoming(msg)
        row_id = await self.inbox.record(msg)
        if row_id is None:
            return False
        if user_id:
            await self.inbox.assign(row_id, user_id)
        text = await self.worded(reply, msg.channel, msg.address) if reply else ""
        await self._close(row_id, status, reply=Reply(text), user_id=user_id,
                          channel=msg.channel, address=msg.address, kind=kind)
        return True

    async def answer_directly(self, channel: str, address: str, said: Said, *,
                              dedupe_key: str, user_id: str | None = None,
                              kind: str = "reply") -> None:
        """A channel's short answer that needs no turn (media Valet cannot read yet)."""
        text = await self.worded(said, channel, address)
        await self.outbound.answer_directly(channel, address, text, dedupe_key=dedupe_key,
                                            user_id=user_id, kind=kind)

    async def count_failure(self, channel: str, external_id: str, error: str) -> int:
        """A channel could not store or handle this message once more: how many times so far
        (counted in the database, so a restart goes on counting)."""
        return await self.inbox.count_failure(channel, external_id, error,
                                                   self.clock.now())

    async def give_up(self, msg: IncomingMessage, reason: str) -> None:
        """A message that kept failing: recorded as failed with its reason, and its sender,
        when Valet knows them, told once (a redelivery is a duplicate and says nothing)."""
        msg = clean_incoming(msg)
        row_id = await self.inbox.record(msg)
        if row_id is None:  # stored before; failed only if it never reached anyone's queue
            row_id = await self.inbox.unadmitted(msg.channel, msg.external_id)
            if row_id is None:
                return
        user = await self.identities.resolve(msg.channel, msg.address) \
            if msg.address else None
        tell = user is not None and not user.blocked
        log.error("%s message %s given up: %s", msg.channel, msg.external_id, reason)
        with speaking_to(user.language if user is not None else None):
            said = self.unreadable_line()
        await self._close(row_id, "failed", reply=Reply(said)
                          if tell else None, user_id=user.id if user else None,
                          channel=msg.channel, address=msg.address, error=reason[:1000])

    async def undelivered(self, outbox_id: int, reason: str) -> None:
        """A sent row reported lost for good: dead, with the reason (a row in any other state
        is left as it is: a report about a message sent again, or already dead)."""
        if await self.outbound.outbox.lost(outbox_id, reason[:1000]):
            log.error("outbox %s: reported lost after it was sent: %s", outbox_id, reason)

    async def close_at_the_door(self, msg: IncomingMessage, row_id: int,
                                admission: Admission) -> None:
        """A sender the access policy did not let through: answered (a pairing code, at most
        one short line) and the row closed; the owner told when the policy says so."""
        user_id = admission.user.id if admission.user else None
        await self._close(row_id, "done" if admission.handled else "rejected",
                          reply=Reply(admission.reply or ""), user_id=user_id,
                          channel=msg.channel, address=msg.address)
        if admission.notify_owner:
            await self.outbound.notify_owner(admission.notify_owner,
                                             dedupe_key=admission.owner_key or f"door:{row_id}")
        if admission.pairing_code and self.pairing_notices is not None:
            await self.pairing_notices.tell()
