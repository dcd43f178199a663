"""A message held to a few segments (`sms.max_segments`), with no exception: every SMS that
leaves is within the cap, whatever it carries. What does not fit goes after a short note
saying how to get the rest ("(reply MORE for the rest)", in the persona's words); what is
left is sent, the same way, when the person asks for it.

It works on the text as it will be sent (plain, emoji dropped, folded to GSM-7 where it can
be), so what it measures is what Twilio bills. A message is some text, then cards (an
approval's question with its code and its answer: "Reply 1 to send, 2 to cancel"):

- the text is cut after a sentence (. ! ? … or a line break), else at a space, else (one word
  longer than the limit) between two characters: never between a GSM-7 escape and its
  character, nor inside a surrogate pair (a character outside the BMP is one character here);
- a link longer than a message can carry is not sent by SMS: `link_line` says where to read it
  (a link cut in two is no link);
- a card is never cut: cards go one a message (the first with the text's first part, the
  next after MORE); the renderer puts them all in one message when they fit there whole. A card
  longer than the limit is the renderer's to prevent (channels.sms.render shortens its
  summary, never its code or its answer); one that comes anyway is cut like text, since the
  cap has no exception;
- a GSM-7 message stays GSM-7: the note is folded to GSM-7 and loses what cannot be.

What is left (`Cut.rest`) keeps its cards apart with CARD_BREAK, so they stay whole after MORE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from channels.sms.gsm import cost, fold, is_gsm
from persona.lines import DEFAULT

# Separates the cards in what is kept for MORE (the record separator: no text a person or a
# model writes has it, and it is never sent: the parts it separates go in messages of their own).
CARD_BREAK = "\x1e"
# Where a sentence ends: after . ! ? … (and closing quotes or brackets), before a space; or at
# a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*(?=\s)|\n")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)


@dataclass(frozen=True)
class Cut:
    text: str  # what goes now: within the limit
    rest: str = ""  # what is left for the person to ask for ("" when nothing is)


def fits(text: str, max_segments: int) -> bool:
    return cost(text).segments <= max_segments


def cut_to_fit(text: str, tail: str, max_segments: int, note: str, *,
               cards: Sequence[str] = (), link_line: str = DEFAULT.sms_link_elsewhere) -> Cut:
    """`text` then the cards (`tail` is the first) in at most `max_segments` segments; when
    they do not fit, as much as fits with `note`, and the rest (cards kept apart)."""
    cards = [c for c in (tail, *cards) if c.strip()]
    text = without_long_links(text, max_segments, note, link_line)
    whole = _joined(text, *cards)
    if len(cards) <= 1 and fits(whole, max_segments):
        return Cut(whole)  # (several cards: one a message; together only as render asks)
    # A card too long for a message of its own cannot stay whole: it is text then.
    if cards and not fits(_sent("", _note_for(cards[0], note), cards[0]), max_segments):
        return cut_to_fit(_joined(text, cards[0]), "", max_segments, note, cards=cards[1:],
                          link_line=link_line)
    return _first_message(text, cards, max_segments, note)


def without_long_links(text: str, max_segments: int, note: str, link_line: str) -> str:
    """Each link that does not fit one message (with the note) replaced by `link_line`."""
    def replaced(match: re.Match[str]) -> str:
        link = match.group()
        return link if fits(f"{link} {note}", max_segments) else link_line
    return _URL.sub(replaced, text)


def _first_message(text: str, cards: list[str], max_segments: int, note: str) -> Cut:
    card, later = (cards[0], cards[1:]) if cards else ("", [])
    if not text:
        return Cut(_sent("", _note_for(card, note), card), _kept("", later))
    if card and fits(_sent(text, _note_for(_joined(text, card), note) if later else "", card),
                     max_segments):
        body = _sent(text, _note_for(_joined(text, card), note) if later else "", card)
        return Cut(body, _kept("", later))
    with_card = _cut_text(text, card, max_segments, note) if card else None
    if with_card is not None:
        end, body = with_card
        return Cut(body, _kept(text[end:].strip(), later))
    alone = _cut_text(text, "", max_segments, note)
    if alone is None:  # not even the note fits beside one character: the text goes bare
        end = _last_fitting(list(range(1, len(text) + 1)),
                            lambda e: fits(text[:e], max_segments)) or len(text)
        return Cut(text[:end], _kept(text[end:].strip(), cards))
    end, body = alone
    return Cut(body, _kept(text[end:].strip(), cards))


def _cut_text(text: str, card: str, max_segments: int, note: str) -> tuple[int, str] | None:
    """Where the text's first part ends so that it, the note and the card fit: after a
    sentence, else at a space, else between two characters. None: nothing of it fits."""
    note_here = _note_for(_joined(text, card), note)

    def body(end: int) -> str:
        return _sent(text[:end], note_here, card)

    def fits_at(end: int) -> bool:
        return fits(body(end), max_segments)

    end = (_last_fitting([*_sentence_ends(text), len(text)], fits_at)
           or _last_fitting([*_spaces(text), len(text)], fits_at)
           or _last_fitting(list(range(1, len(text))), fits_at))
    if end is None or not text[:end].strip():
        return None
    return end, body(end)


def _note_for(message: str, note: str) -> str:
    """The note as this message can carry it: folded to GSM-7 when the message is GSM-7
    (a GSM-7 message must not become UCS-2 for it)."""
    if is_gsm(message):
        note = "".join(f for f in (fold(c) for c in note) if is_gsm(f))
    return " ".join(note.split())


def _joined(*parts: str) -> str:
    return "\n".join(p for p in (part.strip() for part in parts) if p)


def _sent(first: str, note: str, card: str) -> str:
    """The text's first part, the note, then the card: "part (reply MORE...)\\ncard"; a card
    alone with more to come: "card (reply MORE...)"."""
    first = first.rstrip()
    if not first:
        return f"{card.strip()} {note}".strip() if note else card.strip()
    return _joined(f"{first} {note}" if note else first, card)


def _kept(text: str, cards: Sequence[str]) -> str:
    return CARD_BREAK.join([text, *cards]) if cards else text


def kept_parts(rest: str) -> tuple[str, list[str]]:
    """What `Cut.rest` held: its text and its cards."""
    text, *cards = rest.split(CARD_BREAK)
    return text, [c for c in cards if c.strip()]


def _sentence_ends(text: str) -> list[int]:
    return [m.end() for m in _SENTENCE_END.finditer(text) if m.end() > 0]


def _spaces(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\s+", text) if m.start() > 0]


def _last_fitting(ends: list[int], fits_at: Callable[[int], bool]) -> int | None:
    """The last end that fits (ends ascending; a longer text never costs fewer segments, so
    the ends that fit come first)."""
    low, high, found = 0, len(ends) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if fits_at(ends[middle]):
            found, low = ends[middle], middle + 1
        else:
            high = middle - 1
    return found
