"""The short answer to a button press, given at once, before any turn runs (a press is
answered before any model work): what will happen, or why nothing will. It reads the
store only, so the process that receives the press (a web process runs no turn) can say it;
the decision itself is the turn's (bot.approvals.decide), a compare-and-set."""

from __future__ import annotations

from bot.approvals.outcomes import state_word
from bot.approvals.store import ApprovalStore
from bot.contracts.approvals import ApprovalRequest, ApprovalStatus
from bot.contracts.clock import Clock
from bot.contracts.envelopes import ButtonPress, PromptKind
from bot.contracts.options import Option
from bot.contracts.people import User
from persona.lines import Lines, fill
from persona.speaking import speaking_to


class ButtonAnswers:
    def __init__(self, store: ApprovalStore, clock: Clock, *, lines: Lines) -> None:
        self.store = store
        self.clock = clock
        self.lines = lines  # the approval lines, and the pairing buttons' answers

    async def answer_button(self, user: User, button: ButtonPress) -> str:
        """The short answer to a button press, at once (the decision itself is made by the
        turn, with a compare-and-set): what will happen, or why nothing will. Before any
        turn, so said in the presser's language here."""
        with speaking_to(user.language):
            return await self._answer(user, button)

    async def _answer(self, user: User, button: ButtonPress) -> str:
        if button.kind is PromptKind.PAIRING:  # a pairing notice's buttons
            if not user.is_owner:
                return self.lines.pairing_owner_only
            return self.lines.pairing_letting_in if button.choice is Option.APPROVE \
                else self.lines.pairing_refusing
        approval = await self.store.get(button.approval_id)
        refusal = self.not_for(approval, user)
        if refusal is not None or approval is None:
            return refusal or ""
        if self.settled(approval):
            return fill(self.lines.approval_already_short,
                        state=state_word(approval, self.lines, self.clock.now()))
        if button.choice is Option.APPROVE:
            return self.lines.approval_approving
        return self.lines.approval_tell_change if button.choice is Option.EDIT \
            else self.lines.approval_cancelling

    def not_for(self, approval: ApprovalRequest | None, user: User) -> str | None:
        """Why this person cannot decide this request (fail closed), or None."""
        if approval is None:
            return self.lines.approval_unknown
        if approval.user_id != user.id and not user.is_owner:
            return self.lines.approval_not_yours
        return None

    def settled(self, approval: ApprovalRequest) -> bool:
        """No longer open to a decision: decided already, or past its time."""
        return approval.status is not ApprovalStatus.PENDING or \
            approval.expires_at <= self.clock.now()
