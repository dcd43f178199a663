"""The choices a person has on a prompt, and the one table of the words that name them.

Every way a person answers is read here: a Telegram button's data, a bare "1" or "2" by SMS,
the owner's tap on a pairing prompt, and "yes" / "no" typed anywhere (bot.approvals.replies
builds its patterns from the same words). Nothing here imports the rest of Valet, so the
envelopes that travel to and from the channels can carry an `Option` too.
"""

from __future__ import annotations

from enum import StrEnum


class Option(StrEnum):
    """What a prompt offers. A StrEnum: on the wire (button data, stored JSON) it is its
    value, "approve", "edit" or "cancel"."""

    APPROVE = "approve"
    EDIT = "edit"
    CANCEL = "cancel"

    @classmethod
    def parse(cls, word: str) -> Option | None:
        """The option a word names, whatever its case ("Approve", "yes", "ok", "1";
        "cancel", "no", "2"; "edit"); None when it names none."""
        return _BY_WORD.get(word.strip().lower())


OPTIONS = (Option.APPROVE, Option.EDIT, Option.CANCEL)  # what a request offers, in order

# No word here names an action ("send it", "book it" are not answers: issue 43).
APPROVE_WORDS = ("yes", "y", "yeah", "yep", "yup", "ok", "okay", "sure", "approve", "approved",
                 "confirm", "confirmed", "go ahead", "do it", "please do", "👍")
CANCEL_WORDS = ("no", "n", "nope", "nah", "cancel", "reject", "deny", "denied", "don't",
                "dont", "do not", "stop", "skip", "never mind", "nevermind", "👎")
EDIT_WORDS = ("edit",)
# A bare digit answers the one prompt of a message: "Reply 1 to send, 2 to cancel" (SMS).
DIGITS = {"1": Option.APPROVE, "2": Option.CANCEL}

_BY_WORD: dict[str, Option] = {
    **{word: Option.APPROVE for word in APPROVE_WORDS},
    **{word: Option.CANCEL for word in CANCEL_WORDS},
    **{word: Option.EDIT for word in EDIT_WORDS},
    **DIGITS,
}
