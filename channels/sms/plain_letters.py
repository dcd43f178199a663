"""Plain letters for SMS: letters GSM-7 lacks ("á", "ç", "ã", "ê") replaced by their plain
forms ("a", "c", "a", "e"), so a message stays in GSM-7 (160 characters a segment) instead of
turning whole into UCS-2 (70) for one accent.

Whether it is done (`sms.plain_letters`): true or false for everyone, or, unset, by the
reader's language: on where the language reads well without those letters (English, Spanish,
French, German: German's ä ö ü ß and French's é è à ù are in GSM-7 anyway), off where words
lose their sound or meaning (Portuguese: "não", "você", "coração"). docs/configuration.md has
the segments it saves (tests/bench/sms_lines.py measures them)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from channels.sms.gsm import GSM_BASIC, GSM_EXTENDED
from persona.speaking import listener_language

# Languages whose messages read well with plain letters, when sms.plain_letters is unset.
PLAIN_BY_DEFAULT = frozenset({"en", "es", "fr", "de"})
# Letters whose plain form is not their base letter alone.
_SPELLED = {"œ": "oe", "Œ": "OE", "ĳ": "ij", "Ĳ": "IJ", "ł": "l", "Ł": "L", "đ": "d",
            "Đ": "D", "ð": "d", "þ": "th"}

_SETTING: ContextVar[bool | None] = ContextVar("valet_sms_plain_letters", default=None)


def plain_letters(text: str) -> str:
    """`text` with each letter outside GSM-7 replaced by its plain form; every other
    character (punctuation, emoji, a letter GSM-7 has) as it is."""
    return "".join(_plain(char) for char in text)


def _plain(char: str) -> str:
    if char in GSM_BASIC or char in GSM_EXTENDED or not char.isalpha():
        return char
    if char in _SPELLED:
        return _SPELLED[char]
    bare = "".join(c for c in unicodedata.normalize("NFKD", char)
                   if not unicodedata.combining(c))
    return bare if bare and all(c in GSM_BASIC for c in bare) else char


@contextmanager
def plain_letters_setting(setting: bool | None) -> Iterator[None]:
    """sms.plain_letters while a message is rendered (None: by the reader's language)."""
    token = _SETTING.set(setting)
    try:
        yield
    finally:
        _SETTING.reset(token)


def wanted() -> bool:
    """Plain letters for the message being rendered now: the setting, else the language's
    default (the reader's, persona.speaking; English when nobody in particular reads)."""
    setting = _SETTING.get()
    if setting is not None:
        return setting
    return (listener_language() or "en") in PLAIN_BY_DEFAULT
