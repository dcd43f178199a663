"""Mail delivery: the approved tool's first attempt, and the service that retries the rest.

    submit     compose once, store the bytes under the approval id, try once (bounded): the
               tool says "sent", "refused" or "queued"
    run_once   one pass: attempts cut off by a dead process become `unknown`; due queued mail
               is tried (at start-up, all of it at once); outcomes the person is owed are told
               through the gateway (one Notification per mail and outcome), except `unknown`:
               the approval that sent it tells that one, with the mail offered again
               (agents.email.effects)
    start      the background loop (woken at once when a mail is queued); close stops it

Nothing here sends a message that was not stored first, and a stored message is only ever
sent from `queued` through a compare-and-set: exactly once, also across restarts.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agents.email.account import SERVICE, MailAccount, MailError
from agents.email.message import Draft, compose
from agents.email.outbox import MailOutbox, MailStatus, OutgoingMail
from agents.email.smtp import SmtpOutcome, SmtpResult, deliver
from bot.contracts.clock import Clock
from bot.contracts.envelopes import Notification, Urgency
from bot.credentials import CredentialsLocked, CredentialStore
from bot.plumbing.background import cancel_and_wait
from bot.plumbing.backoff import backoff_delay
from bot.plumbing.wake import woken
from persona.lines import fill
from persona.lines_channels import MailLines
from persona.speaking import speaking_to

log = logging.getLogger(__name__)


class AccountLocked(MailError):
    """The account is stored but cannot be opened now (no key, or the wrong one)."""


# The person's account by user id (raises MailError when it cannot be had).
AccountLookup = Callable[[str], Awaitable[MailAccount]]
Notify = Callable[[Notification], Awaitable[Any]]


@dataclass(frozen=True)
class DeliveryPolicy:
    first_attempt_seconds: float = 15.0  # inside the approved tool (its own timeout is 30 s)
    attempt_seconds: float = 60.0  # the deliverer's attempts
    retry_base_seconds: float = 30.0
    retry_cap_seconds: float = 1800.0
    give_up_after: timedelta = timedelta(days=2)
    poll_seconds: float = 30.0

    @property
    def lease(self) -> timedelta:
        """Longer than any attempt: a lapsed lease means the attempting process died."""
        return timedelta(seconds=2 * max(self.first_attempt_seconds, self.attempt_seconds))


class MailDelivery:
    def __init__(self, outbox: MailOutbox, clock: Clock, accounts: AccountLookup, *,
                 lines: MailLines, policy: DeliveryPolicy | None = None,
                 notify: Notify | None = None, tls_context: ssl.SSLContext | None = None,
                 language_of: Callable[[str], Awaitable[str | None]] | None = None) -> None:
        self.outbox = outbox
        self.language_of = language_of  # whom `notify` tells: their language (persona.speaking)
        self.clock = clock
        self.accounts = accounts
        self.policy = policy or DeliveryPolicy()
        self.notify = notify
        self.lines = lines  # what the person is told of each outcome (with `notify`)
        self.tls_context = tls_context
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    # --- the approved tool's way in --------------------------------------------------------

    async def submit(self, *, approval_id: str, user_id: str, account: MailAccount,
                     draft: Draft) -> OutgoingMail:
        """Store the approved message (composed now, once) and make the first attempt. The
        returned row says what happened; a second submit of the same approval sends nothing
        more (the stored row wins)."""
        now = self.clock.now()
        message = compose(draft, approval_id=approval_id, sender=account.address,
                          display_name=account.display_name, at=now)
        stored = await self.outbox.store(
            approval_id=approval_id, user_id=user_id, sender=account.address,
            recipients=draft.recipients, subject=draft.subject, message=bytes(message),
            at=now)
        claimed = await self.outbox.claim(approval_id, now)
        if claimed is None:  # stored before: its state, unchanged
            return stored
        result = await self._attempt(claimed, account, self.policy.first_attempt_seconds)
        if result.status.final:
            await self.outbox.told(approval_id)  # the tool's answer tells the person
        else:
            self._wake.set()
        return result

    # --- attempts ----------------------------------------------------------------------------

    async def _attempt(self, mail: OutgoingMail, account: MailAccount, timeout: float
                       ) -> OutgoingMail:
        """One attempt of a claimed (sending) row, settled by its outcome."""
        result = await deliver(account, mail.sender, mail.recipients, mail.message,
                               timeout=timeout, tls_context=self.tls_context)
        await self._settle(mail, result)
        return await self.outbox.get(mail.approval_id) or mail

    async def _settle(self, mail: OutgoingMail, result: SmtpResult) -> None:
        now = self.clock.now()
        if result.outcome is SmtpOutcome.TRANSIENT:
            delay = backoff_delay(mail.attempts, base=self.policy.retry_base_seconds,
                                  cap=self.policy.retry_cap_seconds)
            await self.outbox.requeue(mail.approval_id, now, now + timedelta(seconds=delay),
                                      result.detail)
            log.info("mail %s queued again in %.0f s: %s", mail.approval_id, delay,
                     result.detail)
            return
        status = {SmtpOutcome.SENT: MailStatus.SENT, SmtpOutcome.PERMANENT: MailStatus.FAILED,
                  SmtpOutcome.UNKNOWN: MailStatus.UNKNOWN}[result.outcome]
        await self.outbox.settle(mail.approval_id, status, now, result.detail or None)
        log.info("mail %s %s", mail.approval_id, status.value)

    # --- the service -------------------------------------------------------------------------

    async def run_once(self, *, startup: bool = False, sole_owner: bool = False) -> None:
        """One pass. At start-up queued mail is tried at once (a restart is a fresh chance),
        and with `sole_owner` (SQLite: no other process can be mid-attempt) every `sending`
        row was left by a dead process."""
        now = self.clock.now()
        await self.outbox.abandon_sending(now, lapsed_only=not (startup and sole_owner))
        for mail in await self.outbox.due(now, any_time=startup):
            if self._stopping:  # the rest waits for the next start
                return
            await self._retry(mail)
        await self.tell_owed()

    async def _retry(self, mail: OutgoingMail) -> None:
        now = self.clock.now()
        if now - mail.created_at > self.policy.give_up_after:
            await self.outbox.give_up(mail.approval_id, now, "the mail server did not answer "
                                      f"for {self.policy.give_up_after.days} days")
            return
        try:
            account = await self.accounts(mail.user_id)
        except MailError as err:
            await self._account_problem(mail, err)
            return
        claimed = await self.outbox.claim(mail.approval_id, now, any_time=True)
        if claimed is not None:
            await self._attempt(claimed, account, self.policy.attempt_seconds)

    async def _account_problem(self, mail: OutgoingMail, err: MailError) -> None:
        """Locked (the key is missing or wrong): maybe later. Gone or unusable
        (disconnected, incomplete): nothing can send it."""
        now = self.clock.now()
        if not isinstance(err, AccountLocked):
            await self.outbox.give_up(mail.approval_id, now, str(err))
            return
        claimed = await self.outbox.claim(mail.approval_id, now, any_time=True)
        if claimed is not None:
            await self._settle(claimed, SmtpResult(SmtpOutcome.TRANSIENT, str(err)))

    async def tell_owed(self) -> None:
        if self.notify is None:
            return
        for mail in await self.outbox.owed():
            if mail.status is MailStatus.UNKNOWN:  # told by its approval, with a card to send
                await self.outbox.told(mail.approval_id)  # it again (agents.email.effects)
                continue
            # About the person's own request (like an approval's expiry): told now, not held
            # for quiet hours.
            language = await self.language_of(mail.user_id) if self.language_of else None
            with speaking_to(language):
                said = outcome_line(mail, self.lines)
            await self.notify(Notification(mail.user_id, said,
                                           f"mail:{mail.approval_id}:{mail.status.value}",
                                           urgency=Urgency.URGENT))
            await self.outbox.told(mail.approval_id)

    def wake(self) -> None:
        self._wake.set()

    def start(self, *, sole_owner: bool) -> None:
        self._task = asyncio.create_task(self._run(sole_owner))

    async def _run(self, sole_owner: bool) -> None:
        startup = True
        while not self._stopping:
            self._wake.clear()  # before the pass: a wake during it means "look again"
            try:
                await self.run_once(startup=startup, sole_owner=sole_owner)
                startup = False
            except Exception:
                log.exception("mail delivery pass failed; trying again")
            if self._stopping:
                return
            await woken(self._wake, self.policy.poll_seconds)

    async def close(self) -> None:
        """Stop the loop. An attempt under way may finish (it is bounded); one that does not
        is cut off, and its row, left `sending`, is settled as unknown by the next start (fail
        closed: never sent twice). Mail not yet tried waits for the next start."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task),
                                   self.policy.attempt_seconds + 1)
        except TimeoutError:
            await cancel_and_wait(self._task)
        self._task = None


def recipients_text(mail: OutgoingMail) -> str:
    return ", ".join(mail.recipients)


def outcome_line(mail: OutgoingMail, lines: MailLines) -> str:
    """What the person is told of a mail they were not told about at once."""
    what = {"subject": mail.subject, "recipients": recipients_text(mail)}
    if mail.status is MailStatus.SENT:
        return fill(lines.mail_sent, **what)
    if mail.status is MailStatus.FAILED:
        return fill(lines.mail_failed, **what,
                    error=mail.last_error or lines.mail_refused)
    return fill(lines.mail_unknown, **what)


def stored_accounts(credentials: CredentialStore) -> AccountLookup:
    """The deliverer's way to a person's account (never kept: read at each attempt)."""

    async def account(user_id: str) -> MailAccount:
        try:
            secret = await credentials.get(user_id, SERVICE)
        except CredentialsLocked as err:
            raise AccountLocked(f"the email connection cannot be opened ({err})") from None
        if secret is None:
            raise MailError("no email account is connected any more")
        return MailAccount.from_secret(secret)

    return account
