"""The 24-hour window: WhatsApp lets a business write free-form only within 24 hours of the
person's last message. What goes out, and how, is decided here, once per outbox row:

- inside the window: the text, cut into messages Twilio takes, and each card as quick-reply
  buttons (in words when buttons cannot be used);
- outside it: the approved template for the message's kind (`whatsapp.templates`: reminder,
  summary, card, notice), its words as the template's variables;
- outside it with no template: nothing on WhatsApp (`None`): the sender hands the message to
  the person's other channel, with a line saying why it came there.

The window opens with every message the person sends (channels.whatsapp.inbound) and is
closed early when Twilio says so (63016, in the API's answer or the status callback: its
clock decides, not Valet's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.contracts.envelopes import OutboundMessage
from channels.plain_cards import card_in_words, cards_in_words
from channels.whatsapp.cards import BODY, card_variables
from channels.whatsapp.render import split_messages, whatsapp_text
from channels.whatsapp.wire import MAX_CARD_BODY
from persona.lines import Lines

WINDOW = timedelta(hours=24)
REMINDER_KEY, REPLY_KEY = "task:", "reply:"  # a reminder's outbox key; a triggered run's


@dataclass(frozen=True)
class Piece:
    """One message to Twilio: a text ("text"), a card ("card"), or a template."""

    form: str
    body: str = ""
    content_sid: str | None = None
    variables: dict[str, str] = field(default_factory=dict)


def is_open(last_inbound: datetime | None, closed: datetime | None, now: datetime) -> bool:
    """Within 24 hours of the person's last message, and not closed by Twilio since."""
    if last_inbound is None or now - last_inbound >= WINDOW:
        return False
    return closed is None or closed < last_inbound


def template_kind(message: OutboundMessage) -> str:
    """Which of `whatsapp.templates` a message outside the window would go as."""
    if message.prompts:
        return "card"
    if message.kind == "notification" and message.dedupe_key.startswith(REMINDER_KEY):
        return "reminder"
    if message.kind == "notification" and message.dedupe_key.startswith(REPLY_KEY):
        return "summary"  # a triggered run's reply (the morning summary)
    return "notice"


def in_session(message: OutboundMessage, lines: Lines, card_sid: str | None) -> list[Piece]:
    """Inside the window: the text's parts, then each card (buttons, or in words)."""
    text = whatsapp_text(message.text)
    cards: list[Piece] = []
    if card_sid is None and message.prompts:
        text = f"{text}\n\n{cards_in_words(message.prompts, lines)}".strip()
    else:
        for prompt in sorted(message.prompts, key=lambda p: p.position):
            cards.append(Piece("card", content_sid=card_sid, variables=card_variables(
                prompt, _card_body(prompt.summary))))
    return [*(Piece("text", body=part) for part in split_messages(text)), *cards]


def by_template(message: OutboundMessage, lines: Lines, sid: str) -> list[Piece]:
    """Outside the window, with an approved template: the words as its variables (a card
    template: each card, the text above the first)."""
    text = whatsapp_text(message.text)
    if not message.prompts:
        return [Piece("template", content_sid=sid, variables={BODY: _fit(text)})]
    pieces = []
    for i, prompt in enumerate(sorted(message.prompts, key=lambda p: p.position)):
        said = card_in_words(prompt, lines)
        body = f"{text}\n\n{said}" if i == 0 and text else said
        pieces.append(Piece("template", content_sid=sid,
                            variables=card_variables(prompt, _fit(body))))
    return pieces


def _card_body(summary: str) -> str:
    summary = " ".join(summary.split())
    return _fit(f"{summary[:1].upper()}{summary[1:]}?")


def _fit(text: str) -> str:
    return text if len(text) <= MAX_CARD_BODY else text[:MAX_CARD_BODY - 3].rstrip() + "..."
