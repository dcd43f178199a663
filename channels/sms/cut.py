"""A message held to a few segments (`sms.max_segments`): cut after its last whole sentence
that fits together with a short note saying how to get the rest ("(reply MORE for the rest)",
in the persona's words); what is left is sent, the same way, when the person asks for it.

It works on the text as it will be sent (plain, emoji dropped, folded to GSM-7 where it can
be), so what it measures is what Twilio bills:

- the cut falls after a sentence (. ! ? … or a line break), else, when not even the first
  sentence fits, at a space; never inside a word, so never inside a URL; and between two
  characters, so never between a GSM-7 escape and its character, nor inside a surrogate pair
  (a character outside the BMP is one character here);
- a GSM-7 message stays GSM-7: the note is folded to GSM-7 and loses what cannot be;
- the lines that ask for an answer (an approval's "Reply 1 to ...") go whole, after the note:
  a question is never cut off. When they alone do not fit, nothing is cut.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from channels.sms.gsm import cost, fold, is_gsm

# Where a sentence ends: after . ! ? … (and closing quotes or brackets), before a space; or at
# a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*(?=\s)|\n")


@dataclass(frozen=True)
class Cut:
    text: str  # what goes now: the whole message, or its first part, the note and the tail
    rest: str = ""  # what is left for the person to ask for ("" when nothing is)


def cut_to_fit(text: str, tail: str, max_segments: int, note: str) -> Cut:
    """`text` then `tail` (the lines that must go whole), in at most `max_segments` segments;
    when they do not fit, the first part of `text` that fits with `note` and `tail`, and the
    rest."""
    whole = _joined(text, tail)
    if cost(whole).segments <= max_segments:
        return Cut(whole)
    if is_gsm(whole):  # the note must not make a GSM-7 message UCS-2
        note = "".join(f for f in (fold(c) for c in note) if is_gsm(f))
    note = " ".join(note.split())

    def fits(end: int) -> bool:
        return cost(_sent(text[:end], note, tail)).segments <= max_segments

    if not fits(0):
        return Cut(whole)  # the question alone is longer than the limit: it goes whole
    end = _last_fitting(_sentence_ends(text), fits) or _last_fitting(_spaces(text), fits)
    if end is None:  # not even one word fits: the first word goes whole (a long URL)
        end = next((e for e in _spaces(text) if e > 0), len(text))
    rest = text[end:].strip()
    if not rest:
        return Cut(whole)
    return Cut(_sent(text[:end], note, tail), rest)


def _joined(text: str, tail: str) -> str:
    return f"{text}\n{tail}".strip() if tail else text


def _sent(first: str, note: str, tail: str) -> str:
    first = first.rstrip()
    return _joined(f"{first} {note}" if first else note, tail)


def _sentence_ends(text: str) -> list[int]:
    return [m.end() for m in _SENTENCE_END.finditer(text) if m.end() > 0]


def _spaces(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\s+", text) if m.start() > 0]


def _last_fitting(ends: list[int], fits: Callable[[int], bool]) -> int | None:
    """The last end that fits (ends ascending; a longer text never costs fewer segments, so
    the ends that fit come first)."""
    low, high, found = 0, len(ends) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if fits(ends[middle]):
            found, low = ends[middle], middle + 1
        else:
            high = middle - 1
    return found
