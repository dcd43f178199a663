"""How Twilio bills a message body in segments, written from Twilio's own rules and kept apart
from Valet's code (channels/sms/gsm.py), so a test that checks Valet's counts against these is
not checking the code against itself.

Twilio's rules (twilio.com/docs/glossary/what-sms-character-limit, "Segment calculator"):
- A body made only of GSM-7 characters is GSM-7: 7 bits a character, and a character of the
  extension table (| ^ € { } [ ] ~ \\ and form feed) takes two (an escape, then the character).
  160 septets fit one SMS; a longer body goes as segments of 153 septets (the user data
  header takes the rest), and an escape is never split from its character.
- Any other character makes the whole body UCS-2: UTF-16 code units, 70 in one SMS, 67 a
  segment beyond; a character outside the Basic Multilingual Plane (most emoji) is a surrogate
  pair, two units, never split across segments.
"""

from __future__ import annotations

from dataclasses import dataclass

BASIC = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà") - {"\x1b"}
EXTENSION = set("|^€{}[]~\\\f")


@dataclass(frozen=True)
class Segments:
    encoding: str  # "GSM-7" or "UCS-2"
    count: int
    units: int  # septets or UTF-16 code units


def segments(body: str) -> Segments:
    if all(c in BASIC or c in EXTENSION for c in body):
        sizes = [2 if c in EXTENSION else 1 for c in body]
        one, each, encoding = 160, 153, "GSM-7"
    else:
        sizes = [len(c.encode("utf-16-le")) // 2 for c in body]
        one, each, encoding = 70, 67, "UCS-2"
    units = sum(sizes)
    if units <= one:
        return Segments(encoding, 1 if body else 0, units)
    count, used = 1, 0
    for size in sizes:
        if used + size > each:  # what does not fit whole starts the next segment
            count, used = count + 1, 0
        used += size
    return Segments(encoding, count, units)
