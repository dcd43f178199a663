"""Which of Valet's languages a few messages are written in, by their commonest small words.

A stop-word scorer, not a library: Valet only needs to tell its five languages apart in
ordinary sentences, and only to *propose* a language (the person confirms it), so a table of
the words every sentence is made of ("que", "und", "the", "não") does that with no model, no
download and nothing to install. A guess is given only when it is clear: enough of the words
are known, and one language has clearly more of them than the next."""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and you to is it of for in that my me i what this can with on are "
                    "have do not be at please your was will how when tomorrow today".split()),
    "es": frozenset("el la los las que de y en un una por para con es mi me no lo se del al "
                    "qué cómo cuando mañana hoy gracias hola puedes quiero necesito está "
                    "estoy también pero muy recuérdame favor".split()),
    "fr": frozenset("le la les de des et est un une pour que qui je tu vous il pas ne mon "
                    "ma mes avec dans sur ce cette demain aujourd merci bonjour peux veux "
                    "suis c'est rappelle moi".split()),
    "de": frozenset("der die das und ist ich du nicht ein eine mit für auf den dem zu mir "
                    "mich bitte morgen heute danke hallo kannst ich's erinnere an um was wie "
                    "wann auch aber sehr".split()),
    "pt": frozenset("o a os as que de do da dos das e é um uma para com não em no na meu "
                    "minha você eu me amanhã hoje obrigado obrigada olá oi pode quero "
                    "preciso lembra lembre também mas muito".split()),
}
# Letters only one of them writes (a hint worth a word each).
_LETTERS = {"es": "ñ¿¡", "de": "ßäöü", "pt": "ãõ", "fr": "œçèêë"}
_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")

MIN_WORDS = 4  # known words needed before a guess is made
MARGIN = 2.0  # the best language's score over the next one's


@dataclass(frozen=True)
class Guess:
    language: str
    score: float
    runner_up: float


def guess_language(text: str) -> Guess | None:
    """The language `text` is clearly in, or None (too short, mixed, or none of the five)."""
    lowered = text.lower()
    tokens = _TOKEN.findall(lowered)
    scores = {code: float(sum(1 for t in tokens if t in words))
              for code, words in _WORDS.items()}
    for code, letters in _LETTERS.items():
        scores[code] += sum(lowered.count(letter) for letter in letters)
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
    (best, score), (_, second) = ranked[0], ranked[1]
    if score < MIN_WORDS or score < MARGIN * second:
        return None
    return Guess(best, score, second)
