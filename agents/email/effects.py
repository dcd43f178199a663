"""What became of an approved mail, for the approval that sent it (bot.approvals.effects):
its `mail_outbox` row, keyed by the approval id.

    queued, sending   still on its way
    sent              done
    failed            failed; the mail deliverer tells the person (MailLines.mail_failed)
    unknown           unknown; the approvals tell the person (MailLines.mail_unknown) and offer
                      to send it again, so the deliverer does not tell this one itself
"""

from __future__ import annotations

from agents.email.delivery import outcome_line
from agents.email.outbox import MailOutbox, MailStatus
from bot.approvals.effects import Effect
from bot.contracts.approvals import ApprovalRequest, ExecutionStatus
from persona.lines_channels import MailLines


class MailEffects:
    """Where an approved mail waits: its `mail_outbox` row, keyed by the approval id."""

    key = "mail_outbox"

    def __init__(self, outbox: MailOutbox, lines: MailLines) -> None:
        self.outbox = outbox
        self.lines = lines

    async def effect(self, approval: ApprovalRequest) -> Effect | None:
        mail = await self.outbox.get(approval.id)
        if mail is None or mail.status is MailStatus.SENT:  # nothing stored, or sent
            return Effect(ExecutionStatus.EXECUTED)
        if mail.status is MailStatus.FAILED:
            return Effect(ExecutionStatus.FAILED, mail.last_error or "", told=True)
        if mail.status is MailStatus.UNKNOWN:
            return Effect(ExecutionStatus.UNKNOWN, mail.last_error or "",
                          line=outcome_line(mail, self.lines))
        return None  # queued, or being sent
