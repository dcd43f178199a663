"""The inbound path: persist (duplicates stop here), who is it (unknown senders never reach the
LLM), one turn at a time per user, and every reply through the outbox (bot.gateway.outbound).

    channel -> receive() -> inbox row -> admit -> kick(user) -> drain: claim, turn, outbox
    channel -> answer_at_the_door() -> inbox row, a fixed answer, closed: no turn
    trigger -> submit()  -> inbox row (the user's queue) -> drain -> reply as a notification
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from bot.budget import paying_for
from bot.contracts.envelopes import (
    ButtonPress,
    Inbound,
    IncomingMessage,
    Notification,
    Reply,
    TriggerMessage,
    TurnStop,
    payload_of,
)
from bot.contracts.people import User
from bot.db.batch import Batch
from bot.db.turn_reads import may_hold, turn_scope
from bot.gateway.deps import GatewayDeps, ReceiveResult
from bot.gateway.door import Said
from bot.gateway.inbox import InboxRow
from bot.gateway.prompt_edits import HOLDING as PROMPTS
from bot.gateway.running import RunningTurns
from bot.gateway.side_doors import SideDoors
from bot.text.sanitize import clean_incoming
from bot.turn.commands import command_word
from bot.turn.media import ReadMedia, heard_line
from bot.work.relay import Relay
from persona.speaking import speaking_to

log = logging.getLogger(__name__)


class Gateway:
    def __init__(self, deps: GatewayDeps) -> None:
        self.deps = deps
        # The doors that start no turn, each row closed the one way rows end (`_close`).
        self.doors = SideDoors(inbox=deps.inbox, identities=deps.identities, clock=deps.clock,
                               outbound=deps.outbound, close=self._close,
                               unreadable_line=deps.unreadable_line,
                               answer_button=deps.answer_button,
                               pairing_notices=deps.pairing_notices)
        # What may reach a running turn: /stop, a message joining it (bot.gateway.running).
        self.running = RunningTurns(deps.inbox, deps.clock, mid_turn=deps.mid_turn,
                                    answers_approval=deps.answers_approval)
        self._drains: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self.outbound = deps.outbound

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start delivering, and pick up messages a previous run left unfinished."""
        self.outbound.start()
        for user_id in await self.deps.inbox.users_with_work():
            log.info("recovering unfinished messages for %s", user_id)
            self.kick(user_id)

    async def stop(self) -> None:
        for task in list(self._drains.values()):
            task.cancel()  # a cancelled turn's row stays `processing`: redone after restart
        await asyncio.gather(*self._drains.values(), return_exceptions=True)
        await self.outbound.stop()

    async def wait_idle(self, poll: float = 0.01) -> None:
        """Until no turn is running and nothing due is waiting to be sent."""
        while True:
            if not self._drains and not await self.outbound.in_flight():
                return
            self.outbound.wake()
            await asyncio.sleep(poll)

    async def wait_answered(self, row_id: int, poll: float = 0.05) -> None:
        """Until one inbound message's turn is over and its reply (if it has one) has left
        the outbox: a terminal attached to `valet serve` waits on its own lines only."""
        while True:
            row = await self.deps.inbox.get(row_id)
            if row is None or row.status not in ("received", "processing"):
                if not await self.outbound.outbox.on_its_way(f"reply:{row_id}"):
                    return
            self.outbound.wake()
            await asyncio.sleep(poll)

    # --- inbound -------------------------------------------------------------------------

    async def receive(self, msg: IncomingMessage) -> ReceiveResult:
        """Called by a channel before it acknowledges: when this returns, the message is
        durable. The turn itself runs in the background."""
        return (await self.receive_row(msg))[0]

    async def receive_row(self, msg: IncomingMessage) -> tuple[ReceiveResult, int | None]:
        """`receive`, and the message's inbox row id (None for a duplicate): its reply is the
        outbox row keyed `reply:<row id>`, so a channel can wait for exactly that reply."""
        msg, deps = clean_incoming(msg), self.deps  # bytes a store or a terminal cannot take
        if msg.choice is not None and msg.third_party and not msg.text.strip():
            msg = replace(msg, choice=None)  # someone else's "1" (a bare forward) picks nothing
        if msg.choice is not None and msg.button is None:
            msg = await self._bind_choice(msg)
        # One statement for a known person who may write: stored straight into their queue.
        recorded = await deps.inbox.record_for_sender(msg)
        if recorded is None:
            return ReceiveResult.DUPLICATE, None
        row_id, sender = recorded
        return await self._admit(msg, row_id, sender), row_id

    # The channels' other doors (bot.gateway.door.Door), opened by `doors`.

    async def answer_at_the_door(self, msg: IncomingMessage, reply: Said | None, *,
                                 user_id: str | None, status: str = "done",
                                 kind: str = "reply") -> bool:
        return await self.doors.answer_at_the_door(msg, reply, user_id=user_id, status=status,
                                                   kind=kind)

    async def answer_directly(self, channel: str, address: str, text: Said, *,
                              dedupe_key: str, user_id: str | None = None,
                              kind: str = "reply") -> None:
        await self.doors.answer_directly(channel, address, text, dedupe_key=dedupe_key,
                                         user_id=user_id, kind=kind)

    async def count_failure(self, channel: str, external_id: str, error: str) -> int:
        return await self.doors.count_failure(channel, external_id, error)

    async def give_up(self, msg: IncomingMessage, reason: str) -> None:
        await self.doors.give_up(msg, reason)

    async def undelivered(self, outbox_id: int, reason: str) -> None:
        await self.doors.undelivered(outbox_id, reason)

    async def _bind_choice(self, msg: IncomingMessage) -> IncomingMessage:
        """A bare choice answers the one approval prompt of the newest message that asked
        for a digit, unless a reply came after it ("1" answering a question, a list: text).
        A pairing request never asks for a digit (it is answered "PAIR <code>"), and a
        message a stranger caused never changes what the digit answers."""
        prompt = await self.outbound.outbox.digit_prompt_to(msg.channel, msg.address)
        if prompt is None or msg.choice is None:
            return msg
        return replace(msg, button=ButtonPress(prompt.id, msg.choice.value, kind=prompt.kind))

    async def _admit(self, msg: IncomingMessage, row_id: int, sender: str | None
                     ) -> ReceiveResult:
        """`sender`: the person the row was stored for (a known address that may write);
        None: the access policy decides (a stranger, a blocked person, an address marked
        unreachable) and the row joins the person's queue only if it lets them in."""
        deps = self.deps
        user: User | None = None
        if sender is None:
            admission = await deps.access.admit(msg.channel, msg.address, msg.display_name,
                                                msg.text, deps.clock.now(), msg.account)
            if admission.user is None or admission.handled:
                await self.doors.close_at_the_door(msg, row_id, admission)
                return ReceiveResult.HANDLED if admission.handled else ReceiveResult.REJECTED
            user, sender = admission.user, admission.user.id
            await deps.inbox.assign(row_id, sender)
            if admission.unreachable:
                await deps.identities.wrote_again(msg.channel, msg.address)
        if deps.relay is not None:  # the turn, if one runs, is in some worker
            await self._hand_on(deps.relay, sender, msg, row_id)
        else:
            # Their drain looks for it before it ends, whatever happens to it next (a running
            # turn may take it, /stop closes it).
            self._dirty.add(sender)
            if self.running.stop(sender, msg.text):
                await self._close(row_id, "done")  # the stopped turn's reply says it
                return ReceiveResult.HANDLED
            if await self.running.steer(sender, msg, row_id):
                return ReceiveResult.JOINED  # the running turn reads it before its next step
            self.kick(sender)
        if msg.button is not None and msg.button.answer_ref:
            user = user or await deps.users.get(sender)
            if user is not None:
                await self.doors.answer_button(msg.channel, user, msg.button)
        return ReceiveResult.ACCEPTED

    async def _hand_on(self, relay: Relay, user_id: str, msg: IncomingMessage,
                       row_id: int) -> None:
        """Another process may be running this person's turn: /stop and a message that may
        join it are said to every worker (the one running it acts), and the row is announced
        on the work stream all the same (no turn running: it gets one of its own)."""
        word = command_word(msg.text)
        if word is not None and word[0] == "/stop":
            await relay.stop(user_id, row_id)
        elif self.running.may_join(msg):
            await relay.steer(user_id, row_id, msg.text)
        await relay.announce(user_id, row_id)

    async def submit(self, msg: TriggerMessage) -> bool:
        """The entry by user: a turn no channel message started, queued in the user's order
        (after the messages they already sent). False when this run key was seen before."""
        row_id = await self.deps.inbox.record_for_user(msg, self.deps.clock.now())
        if row_id is None:
            return False
        if self.deps.relay is not None:
            await self.deps.relay.announce(msg.user_id, row_id)
        else:
            self.kick(msg.user_id)
        return True

    async def _close(self, row_id: int, status: str, *, reply: Reply | None = None,
                     user_id: str | None = None, channel: str = "", address: str = "",
                     error: str | None = None, writes: Batch | None = None,
                     kind: str = "reply") -> None:
        """The one way an inbox row ends: its reply (if it has one) queued and the row closed
        together (with the stored turn, `writes`), so the reply exists exactly once. One
        statement on Postgres (bot.db.batch)."""
        deps = self.deps
        speaks = reply is not None and bool(reply.text or reply.prompts)
        batch = writes if writes is not None else Batch()
        if speaks and reply is not None:
            await self.outbound.queue_reply(
                batch, dedupe_key=f"reply:{row_id}", user_id=user_id, channel=channel,
                address=address, text=reply.text,
                payload=payload_of(reply.prompts, reply.stop,
                                   {"kind": kind} if kind != "reply" else None))
        await deps.inbox.close(batch, row_id, status, deps.clock.now(), error)
        await batch.run(deps.db)
        if speaks:
            self.outbound.wake(channel, address)

    def kick(self, user_id: str) -> None:
        """There is work for this user: make sure one drain runs for them."""
        self._dirty.add(user_id)
        if self.deps.person_first is not None:  # background LLM work gives way
            self.deps.person_first.turn_due(user_id)
        if user_id not in self._drains:
            self._drains[user_id] = asyncio.create_task(self._drain(user_id))

    async def _drain(self, user_id: str) -> None:
        try:
            while True:
                async with self.deps.locks.hold(user_id):
                    while True:
                        self._dirty.discard(user_id)
                        row = await self.deps.inbox.claim_next(user_id)
                        if row is None:
                            break
                        await self._process(row)
                        if not (row.waiting_behind or user_id in self._dirty):
                            break  # none behind it when claimed, none assigned since
                # No await between this check and leaving: a kick either sees us gone or
                # marked the user dirty before it.
                if user_id not in self._dirty:
                    if self.deps.drained is not None:
                        self.deps.drained(user_id)
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("draining %s failed; retrying shortly", user_id)
            asyncio.get_running_loop().call_later(1.0, self.kick, user_id)
        finally:
            self._drains.pop(user_id, None)
            if self.deps.person_first is not None and user_id not in self._drains:
                self.deps.person_first.turn_done(user_id)

    async def _process(self, row: InboxRow) -> None:
        # A turn reads the person's row (and what their stores hold) once; on its first run
        # there is no journal to replay and no stored reply to look for (bot.db.turn_reads).
        with turn_scope(f"inbox-{row.id}", first_run=row.attempts == 1):
            await self._run_turn(row)

    async def _run_turn(self, row: InboxRow) -> None:
        deps = self.deps
        assert row.user_id is not None
        turn_id = f"inbox-{row.id}"
        done = await deps.history.turn_reply(turn_id) if row.attempts > 1 else None
        if done is not None:  # written before a crash, not yet replied to
            await self._finish(row, Reply(done, turn_id=turn_id))
            return
        user = await deps.users.get(row.user_id)
        if user is None or user.blocked:
            await self._close(row.id, "rejected")
            return
        if deps.budget is not None and await deps.budget.holds(row, user):
            return  # at today's allowance: it waits (bot.gateway.budget)
        target = await self._reply_target(row)
        if target is None:
            log.warning("trigger run %s for %s: no reachable channel; dropped", row.id, user.id)
            await self._close(row.id, "failed", error="unreachable")
            return
        channel, address = target
        await self.outbound.typing(channel, address)
        media = await self._read_media(row)
        if media.unreadable is not None:  # a voice note that cannot be heard: said once
            with speaking_to(user.language):
                said = deps.voice_line()
            await self._close(row.id, "failed", reply=Reply(said), user_id=user.id,
                              channel=row.channel, address=row.address, error=media.unreadable)
            return
        if media.transcript is not None and media.transcript != row.text:
            await deps.inbox.set_text(row.id, media.transcript)
            row = replace(row, text=media.transcript)
        if media.heard is not None:  # an audio file's words, kept for a redone turn
            await deps.inbox.set_media(row.id, media.heard)
            row = replace(row, media=media.heard)
        stop, mailbox = self.running.begin(user.id, turn_id,
                                           own_message=row.trigger_task_id is None)
        writes = Batch()  # the stored turn, committed with its reply and the row's close
        try:
            with paying_for(user.id, user.timezone, user.is_owner):  # the turn's cost is theirs
                reply = await deps.handle_message(
                    self._inbound(row, turn_id, channel, address, media),
                    emit=self.outbound.progress(channel, address), cancel=stop, steering=mailbox,
                    writes=writes)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.exception("turn %s for %s failed (attempt %d)", turn_id, user.id, row.attempts)
            if row.attempts < deps.max_attempts:
                await deps.clock.sleep(deps.retry_seconds * row.attempts)
                self._dirty.add(user.id)
                return  # still `processing`: the drain claims it again
            with speaking_to(user.language):
                said = deps.failure_line()
            reply = Reply(said, stop=TurnStop.FAILED)
            await self._finish(row, reply, status="failed", error=f"{type(err).__name__}: {err}")
            return
        finally:
            self.running.end(user.id, mailbox)
        if reply.stop is TurnStop.LLM_ERROR and deps.budget is not None \
                and await deps.budget.holds(row, user, fresh=True):
            return  # the meter stopped it before a call: it waits, and goes on from its journal
        await self._finish(row, reply, writes=writes)
        if may_hold(user.id, PROMPTS.name):  # a prompt message whose requests may be settled
            await self.outbound.settle_prompts(user.id)

    async def _reply_target(self, row: InboxRow) -> tuple[str, str] | None:
        """Where the turn's reply goes: back where the message came from, or, for a
        trigger's run, where a notification for the person goes."""
        if row.trigger_task_id is None:
            return row.channel, row.address
        assert row.user_id is not None
        found = await self.outbound.route(row.user_id, row.reply_channel, row.origin_channel)
        return (found.channel, found.address) if found else None

    async def _read_media(self, row: InboxRow) -> ReadMedia:
        """A photo's bytes and a voice note's words are fetched now, for this turn only (the
        row keeps the reference), never before the message was stored."""
        if not row.media:
            return ReadMedia()
        source = self.outbound.sender(row.channel)
        return await self.deps.media.read(
            source if source is not None and source.traits.media else None, row.media, row.text)

    def _inbound(self, row: InboxRow, turn_id: str, channel: str, address: str,
                 media: ReadMedia) -> Inbound:
        assert row.user_id is not None
        return Inbound(user_id=row.user_id, channel=channel, text=row.text,
                       received_at=row.received_at, external_id=row.external_id,
                       address=address, button=row.button, turn_id=turn_id,
                       from_trigger=row.trigger_task_id, media=row.media, images=media.images,
                       third_party=row.third_party)

    async def _finish(self, row: InboxRow, reply: Reply, *, status: str = "done",
                      error: str | None = None, writes: Batch | None = None) -> None:
        """The reply is queued and the message closed together with the stored turn
        (`writes`): exactly once. A trigger's reply is a notification: routed to the person,
        quiet hours respected."""
        deps = self.deps
        speaks = not reply.silent and bool(reply.text or reply.prompts)
        heard = heard_line(row.media, row.text) if row.media else None
        text = f"{heard}\n\n{reply.text}" if heard and reply.text else reply.text
        if speaks and row.trigger_task_id is not None and deps.silenced is not None \
                and not reply.prompts and await deps.silenced(row.external_id):
            speaks = False
        if not (speaks and row.trigger_task_id is not None and row.user_id is not None):
            await self._close(row.id, status, reply=replace(reply, text=text) if speaks else None,
                              user_id=row.user_id, channel=row.channel, address=row.address,
                              error=error, writes=writes)
            return
        async with deps.db.transaction() as tx:  # a trigger's reply is a notification
            if writes is not None:
                await writes.run_in(tx)
            await self.outbound.notifier.notify(Notification(
                row.user_id, text, dedupe_key=f"reply:{row.id}", channel=row.reply_channel,
                fallback_channel=row.origin_channel, urgency=row.urgency,
                prompts=reply.prompts), q=tx)
            await deps.inbox.close(tx, row.id, status, deps.clock.now(), error)
        self.outbound.wake()
