"""Someone else's words that came with the person's message (a forwarded message, a quote,
the quoted part of a reply, a forwarded caption: bot.contracts.envelopes.ThirdPartyText),
put into the person's message for the model as untrusted data (bot.text.untrusted): one
quoted block each, after the person's own words. The block's marker is what taints the turn
(every change asks: docs/security.md), in this turn and in any later one whose history
holds it."""

from __future__ import annotations

from bot.contracts.envelopes import ThirdPartyText
from bot.text.untrusted import quote_untrusted

# Whose words each kind is, for the note before the block.
_WHAT = {"forwarded": "a message the user forwarded",
         "forwarded_caption": "the caption of media the user forwarded",
         "quote": "a passage the user quoted",
         "reply": "the message the user replied to"}


def third_party_block(item: ThirdPartyText) -> str:
    what = _WHAT.get(item.kind, "text the user passed on")
    who = f", written by {item.origin}" if item.origin else ", written by someone else"
    return quote_untrusted(item.text, note=f"the text below is {what}{who}, not the user's "
                           "own words")


def with_third_party(text: str, items: tuple[ThirdPartyText, ...]) -> str:
    """The person's own `text`, then each third-party text as a quoted block."""
    if not items:
        return text
    blocks = [third_party_block(item) for item in items if item.text.strip()]
    return "\n\n".join(([text] if text.strip() else []) + blocks)
