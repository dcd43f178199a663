"""GSM-7, the SMS alphabet: what fits in it, close replacements for what does not, and what a
message costs in segments.

One character outside GSM-7 (a curly quote from the LLM, an em dash, a non-breaking space)
switches the whole message to UCS-2: 70 characters a segment instead of 160. `fold` replaces
such punctuation and spaces with their plain equivalents (letters: channels.sms.plain_letters),
but only when that makes the whole text GSM-7;
a text that needs UCS-2 anyway (Greek, Hindi, emoji the persona allows) keeps its characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# GSM 03.38 basic table (one septet each) and the extension table (two: escape + char).
GSM_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")
GSM_EXTENDED = frozenset("^{}\\[~]|€\f")

# Close GSM-7 equivalents for what LLMs and phones commonly produce.
REPLACEMENTS: dict[str, str] = {
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "`": "'", "´": "'",
    "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "«": '"', "»": '"',
    "‹": "'", "›": "'",
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-", "⁃": "-",
    "…": "...", "•": "-", "·": "-", "‣": "-", "◦": "-",
    "\u00a0": " ", "\u2002": " ", "\u2003": " ", "\u2007": " ", "\u2009": " ", "\u200a": " ",
    "\u202f": " ", "\u205f": " ", "\u3000": " ", "\t": " ",
    "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "", "\u00ad": "",
    "×": "x", "÷": "/", "™": "TM", "©": "(c)", "®": "(R)", "°": " deg", "½": "1/2",
    "¼": "1/4", "¾": "3/4", "≤": "<=", "≥": ">=", "≠": "!=", "→": "->", "←": "<-",
    "⇒": "=>", "✓": "v",
}

SINGLE_GSM = 160
MULTI_GSM = 153  # 7 septets of each part go to the concatenation header
SINGLE_UCS2 = 70
MULTI_UCS2 = 67


class Encoding(Enum):
    GSM7 = "GSM-7"
    UCS2 = "UCS-2"


def is_gsm(text: str) -> bool:
    return all(c in GSM_BASIC or c in GSM_EXTENDED for c in text)


def _fold_char(char: str) -> str | None:
    if char in GSM_BASIC or char in GSM_EXTENDED:
        return char
    # Accented letters GSM-7 lacks (á, ê, ō...) are not punctuation: they are replaced only
    # where the reader's language allows (channels.sms.plain_letters).
    return REPLACEMENTS.get(char)


def fold(text: str) -> str:
    """The text in GSM-7 when close replacements get it there; otherwise unchanged."""
    if is_gsm(text):
        return text
    text = text.replace("\r\n", "\n")
    folded = []
    for char in text:
        replacement = _fold_char(char)
        if replacement is None:
            return text
        folded.append(replacement)
    return "".join(folded)


@dataclass(frozen=True)
class Cost:
    encoding: Encoding
    segments: int
    units: int  # septets (GSM-7) or UTF-16 code units (UCS-2)


def cost(text: str) -> Cost:
    """How the text is encoded and how many segments it is billed as. An extension character
    (two septets) or a surrogate pair is never split across two segments."""
    if is_gsm(text):
        sizes = [2 if c in GSM_EXTENDED else 1 for c in text]
        single, multi, encoding = SINGLE_GSM, MULTI_GSM, Encoding.GSM7
    else:
        sizes = [2 if ord(c) > 0xFFFF else 1 for c in text]
        single, multi, encoding = SINGLE_UCS2, MULTI_UCS2, Encoding.UCS2
    units = sum(sizes)
    if units <= single:
        return Cost(encoding, 1 if text else 0, units)
    segments, used = 1, 0
    for size in sizes:
        if used + size > multi:
            segments, used = segments + 1, 0
        used += size
    return Cost(encoding, segments, units)
