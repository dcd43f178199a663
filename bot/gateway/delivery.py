"""The deliverer: sends what the outbox holds, fairly.

    addresses  each (channel, address) is a queue of its own, in lanes (bot.gateway.outbox):
               urgent, the rest of a long message, bulk; order kept within each lane
    ready      addresses with something to send now, taken round-robin
    workers    `delivery.concurrency` of them; each takes the next ready address, sends ONE
               message (the head of its queue) and puts the address back at the end: a
               person with 300 messages waiting has one slot at a time, never all of them,
               and nobody waits for a batch to finish
    pacing     a channel that keeps a pace per address (Telegram: its sender's `ready_in`) says
               when the address may go again; the address waits on a timer, holding no slot
    wake-ups   a scan of the due addresses every `poll_seconds` and whenever something was
               queued (`wake`); `wake_address` readies one address directly, which is what a
               per-address wake-up from another process (a Redis stream) would call

The database decides: a message is claimed with a compare-and-set (`OutboxStore.claim`), so
several deliverers, in one process or many, never send a message twice and keep each
address's order. What this class keeps in memory is only who to look at next.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import Enum
from typing import Protocol

from bot.channel import (
    ChannelDown,
    ChannelSender,
    PartlySent,
    PermanentSendError,
    TransientSendError,
)
from bot.config.policies import DeliveryPolicy
from bot.contracts.clock import Clock
from bot.contracts.envelopes import OutboundMessage
from bot.gateway.health import ChannelHealth, Outage
from bot.gateway.outbox import OutboxStore
from bot.gateway.sign_in_links import redacted
from bot.meter.gate import Verdict
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.wake import woken
from persona.speaking import speaking_to

log = logging.getLogger(__name__)

# Told when a send failed for good because the address cannot be written to any more.
OnPermanent = Callable[[OutboundMessage, PermanentSendError], Awaitable[None]]
# Told when a channel's outage starts (bot.gateway.health).
OnDown = Callable[[str, Outage], Awaitable[None]]
LanguageOf = Callable[[str], Awaitable[str | None]]


class Admits(Protocol):
    """The meter (bot.meter.gate.Meter): whether a message may go now, counted if it does."""

    async def admit(self, message: OutboundMessage, sender: ChannelSender) -> Verdict: ...


Address = tuple[str, str]  # (channel, address)


class Step(Enum):
    DONE = "done"  # the head was sent or dead-lettered
    MOVED = "moved"  # it went back to wait: a retry, or the rest of a long message
    WAIT = "wait"  # the head may not go yet; `delay` says when
    IDLE = "idle"  # nothing to send now (or another deliverer is sending to the address)


@dataclass(frozen=True)
class Outcome:
    step: Step
    delay: float = 0.0
    paced: bool = False  # a WAIT the channel's pace asked for (no scan makes it shorter)
    last: bool = False  # DONE with nothing else pending for the address: no need to look again


IDLE = Outcome(Step.IDLE)


class OutboxDeliverer:
    def __init__(self, store: OutboxStore, senders: Mapping[str, ChannelSender], clock: Clock,
                 policy: DeliveryPolicy | None = None, *,
                 on_permanent: OnPermanent | None = None, health: ChannelHealth | None = None,
                 on_down: OnDown | None = None, meter: Admits | None = None) -> None:
        self.store = store
        self.meter = meter  # every message passes it before its channel sees it
        self.on_permanent = on_permanent
        self.health = health or ChannelHealth()
        self.on_down = on_down  # told once an outage starts (the owner hears of it)
        # The recipient's language, for what a channel adds in its own words (a card's
        # "Reply 1 to ...", "reply MORE"): persona.speaking. None: the persona's.
        self.language_of: LanguageOf | None = None
        self.senders = senders
        self.clock = clock
        self.policy = policy or DeliveryPolicy()
        self._wake = asyncio.Event()
        self._running = False
        self._ready: asyncio.Queue[Address | None] = asyncio.Queue()  # None: a worker stops
        self._queued: set[Address] = set()
        self._busy: set[Address] = set()
        self._again: set[Address] = set()  # readied while busy: look again after this step
        self._timers: dict[Address, tuple[asyncio.TimerHandle, bool]] = {}  # (timer, paced)

    # --- the service -----------------------------------------------------------------------

    def wake(self) -> None:
        """Something was queued: scan for due addresses now rather than at the next poll."""
        self._wake.set()

    def wake_address(self, channel: str, address: str) -> None:
        """Something was queued for this address: look at it now (or when its pace lets it:
        a new message cannot go sooner than the channel allows)."""
        self._ready_up((channel, address))

    async def run(self) -> None:
        self._running = True
        if self.store.db.dialect == "sqlite":
            # The embedded database has one delivering process: whatever is `sending` at
            # start-up was left by a crash. (Several processes share Postgres instead, where a
            # claim is stale only after stale_sending_seconds.)
            await self.store.abandon_stale(self.clock.now() + timedelta(seconds=1))
        workers = [asyncio.create_task(self._work()) for _ in range(self.policy.concurrency)]
        try:
            while self._running:
                await self._scan()
                await woken(self._wake, self.policy.poll_seconds)
                self._wake.clear()
        finally:
            # A worker in the middle of a send finishes it (a cancelled send would leave its
            # row "outcome unknown"); idle ones stop at once.
            for _ in workers:
                self._ready.put_nowait(None)
            await asyncio.gather(*workers, return_exceptions=True)
            for timer, _paced in self._timers.values():
                timer.cancel()
            self._timers.clear()

    def stop(self) -> None:
        self._running = False
        self._wake.set()

    async def _scan(self) -> None:
        try:
            await self.store.abandon_stale(
                self.clock.now() - timedelta(seconds=self.policy.stale_sending_seconds))
            for address in await self.store.due_addresses(self.clock.now(), self.policy.batch):
                self._ready_up(address)
        except Exception:
            log.exception("outbox scan failed; trying again")

    def _ready_up(self, address: Address, *, forced: bool = False) -> None:
        """Put the address in the ready queue (once). Only the end of a wait the channel's pace
        asked for readies a paced address (`forced`); a retry's wait is cut short (the clock
        may have moved, or something more urgent may have come)."""
        if address in self._busy:
            self._again.add(address)
            return
        if address in self._queued:
            return
        held = self._timers.get(address)
        if held is not None:
            timer, paced = held
            if paced and not forced:
                return
            timer.cancel()
            del self._timers[address]
        self._queued.add(address)
        self._ready.put_nowait(address)

    async def _work(self) -> None:
        while True:
            address = await self._ready.get()
            if address is None:
                return
            self._queued.discard(address)
            self._busy.add(address)
            try:
                outcome = await self._step(address)
            except Exception:
                log.exception("outbox delivery to %s:%s failed; trying again", *address)
                outcome = Outcome(Step.WAIT, self.policy.poll_seconds)
            finally:
                self._busy.discard(address)
            self._settle(address, outcome)

    def _settle(self, address: Address, outcome: Outcome) -> None:
        again = address in self._again
        self._again.discard(address)
        if outcome.last and not again:
            return  # its queue is empty: the next message queued here readies it again
        if outcome.step in (Step.DONE, Step.MOVED) or again:
            self._ready_up(address)  # at the end of the queue: the next address goes first
        elif outcome.step is Step.WAIT:
            timer = asyncio.get_running_loop().call_later(
                max(outcome.delay, 0.0), self._wait_over, address)
            self._timers[address] = (timer, outcome.paced)

    def _wait_over(self, address: Address) -> None:
        self._timers.pop(address, None)
        self._ready_up(address, forced=True)

    # --- one pass, for tests and one-off runs ------------------------------------------------

    async def deliver_due(self) -> int:
        """Everything due now: each address's queue in order, the addresses side by side (up to
        `concurrency` at once). Returns how many were sent or dead-lettered."""
        slots = asyncio.Semaphore(self.policy.concurrency)

        async def drain(address: Address) -> int:
            done = 0
            while True:
                async with slots:
                    outcome = await self._step(address)
                if outcome.step is Step.DONE:
                    done += 1
                elif outcome.step is not Step.MOVED:
                    return done

        addresses = await self.store.due_addresses(self.clock.now(), self.policy.batch)
        return sum(await asyncio.gather(*(drain(a) for a in addresses)))

    # --- one message -------------------------------------------------------------------------

    async def _step(self, address: Address) -> Outcome:
        """The head of the address's queue, sent if it may go now."""
        channel, to = address
        now = self.clock.now()
        head = await self.store.head(channel, to, now)
        if head is None or head.sending:
            return IDLE  # nothing to do, or a send under way (here or in another process)
        if head.next_attempt_at > now:
            return Outcome(Step.WAIT, (head.next_attempt_at - now).total_seconds())
        if self.health.is_down(channel) and not self.health.may_probe(channel, now):
            return Outcome(Step.WAIT, self.health.probe.total_seconds())  # holds no slot
        sender = self.senders.get(channel)
        pace = sender.ready_in(to) if sender is not None else 0.0
        if pace > 0:
            return Outcome(Step.WAIT, pace, paced=True)
        outcome = await self._deliver(head.message)
        if outcome.step is Step.DONE and not head.others:
            return replace(outcome, last=True)
        return outcome

    async def _deliver(self, message: OutboundMessage) -> Outcome:
        if not await self.store.claim(message.id, self.clock.now()):
            return IDLE  # another deliverer has it, or something ahead of it appeared
        sender = self.senders.get(message.channel)
        if sender is None:
            await self.store.dead(message.id, f"no sender for channel {message.channel!r}")
            return Outcome(Step.DONE)
        attempt = message.attempts + 1
        language = await self.language_of(message.user_id) \
            if self.language_of is not None and message.user_id else None
        if self.meter is not None:
            with speaking_to(language):  # the meter counts the message as it will be sent
                verdict = await self.meter.admit(message, sender)
            if verdict.wait_until is not None:  # not a failed try: it waits for the window
                await self.store.retry_at(message.id, verdict.wait_until, verdict.reason,
                                          counts=False)
                return Outcome(Step.MOVED)
            if not verdict.go:
                await self.store.dead(message.id, verdict.reason, text=redacted(message.text))
                log.info("outbox %s not sent: %s", message.id, verdict.reason)
                return Outcome(Step.DONE)
        try:
            with speaking_to(language):
                channel_id = await sender.send(message)
        except PartlySent as partly:
            await self.store.rest_later(message.id, partly.parts_sent, self.clock.now())
            return Outcome(Step.MOVED)
        except ChannelDown as err:
            return await self._channel_down(message, str(err))
        except PermanentSendError as err:
            # Marked before the row settles: whoever waits for the outbox to go quiet then
            # also sees the address as unwritable.
            if self.on_permanent is not None and (err.unreachable or err.opted_out):
                await self.on_permanent(message, err)
            await self.store.dead(message.id, str(err), text=redacted(message.text))
            log.error("outbox %s dead: %s", message.id, err)
            return Outcome(Step.DONE)
        except Exception as err:
            if not isinstance(err, TransientSendError):  # an adapter bug: retry, bounded
                log.exception("outbox %s: sender %s crashed", message.id, message.channel)
            return await self._later(message, attempt, err)
        # A sign-in link is kept no longer than it takes to send it.
        await self.store.mark_sent(message.id, channel_id, self.clock.now(),
                                   text=redacted(message.text))
        if self.health.up(message.channel):
            self.wake()  # every address waiting on it may go now
        return Outcome(Step.DONE)

    async def _channel_down(self, message: OutboundMessage, reason: str) -> Outcome:
        """The message waits (a wait, not a failed try: however long the outage, nothing is
        dead-lettered for it), and the outage is told once."""
        now = self.clock.now()
        probe = self.health.probe
        await self.store.retry_at(message.id, now + probe, f"channel down: {reason}",
                                  counts=False)
        outage = self.health.down(message.channel, reason, now)
        if outage is not None and self.on_down is not None:
            try:
                await self.on_down(message.channel, outage)
            except Exception:  # telling is a courtesy; the messages still wait
                log.exception("telling the owner that %s is down failed", message.channel)
        return Outcome(Step.WAIT, probe.total_seconds())

    async def _later(self, message: OutboundMessage, attempt: int, err: Exception) -> Outcome:
        # "Wait N seconds" (Telegram's flood control) is not a failure: a burst of them must
        # not use up the attempts and drop the message.
        retry_after = getattr(err, "retry_after", None)
        if retry_after is None and attempt >= self.policy.max_attempts:
            await self.store.dead(message.id, f"gave up after {attempt} attempts: {err}",
                                  text=redacted(message.text))
            log.error("outbox %s dead after %s attempts: %s", message.id, attempt, err)
            return Outcome(Step.DONE)
        # The channel said when (Telegram's retry_after): exactly then, neither earlier (it
        # would refuse again) nor later (the backoff, past max_delay too); else the backoff.
        delay = float(retry_after) if retry_after is not None else backoff_delay(
            attempt, base=self.policy.base_delay, cap=self.policy.max_delay)
        await self.store.retry_at(message.id, self.clock.now() + timedelta(seconds=delay),
                                  f"{type(err).__name__}: {err}", counts=retry_after is None)
        log.warning("outbox %s: send failed (%s); retry in %.1fs", message.id, err, delay)
        return Outcome(Step.MOVED)
