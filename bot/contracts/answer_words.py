"""The closed answer table: every word an answer to "may I?" may be made of, per language.

Data only: bot/approvals/grammar.py reads a message with it. A message decides a card only
when, once its case, the punctuation around its words, the emoji that say nothing and the
courtesy words are set aside, it is exactly one answer built from these words
(docs/approvals.md has the forms: "yes", "no", "4821", "yes 4821", "1 yes 2 no", "yes to
all", "change …"). Anything else decides nothing, whatever it holds.

A word belongs in `yes` or `no` only when it names the person's verdict and nothing else: NO
word here names an action ("send", "delete", "book", "save", "bórralo", "supprime-le",
"lösch es" are never yes: tests/unit/test_answer_grammar.py checks it), and no word here is
sarcasm-prone once something follows it ("yeah right", "oh sure" are not answers, since
"right" and "oh" are not in the table).

English comes first and always (the options' own words, bot.contracts.options, are its
core); a persona that lists more languages (`languages: [en, es]`) adds theirs, so a person
may mix them ("ok gracias"). Phrases of several words are written with spaces and matched
as one ("go ahead", "por favor"); a hyphen is a space ("vas-y" is "vas y"). A language is
one `AnswerWords` value in `LANGUAGES`: adding one is adding data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.contracts.options import APPROVE_WORDS, CANCEL_WORDS


@dataclass(frozen=True)
class AnswerWords:
    yes: frozenset[str] = frozenset()
    no: frozenset[str] = frozenset()
    # Set aside wherever they stand ("yes please", "no thanks", "ok 🙏"): they change nothing,
    # and a message of courtesy alone ("thanks") is not an answer.
    courtesy: frozenset[str] = frozenset()
    # After a yes or a no, every waiting card at once ("yes to all", "cancel both").
    everything: frozenset[str] = frozenset()
    # The edit form opens with one of these ("change the subject to Q3"): never a verdict,
    # it makes a new card bound to the changed arguments.
    edit: frozenset[str] = frozenset()

    def __or__(self, other: AnswerWords) -> AnswerWords:
        return AnswerWords(**{name: getattr(self, name) | getattr(other, name)
                              for name in self.__dataclass_fields__})

    @property
    def phrases(self) -> frozenset[str]:
        """Every entry, of one word or several."""
        return frozenset(w for name in self.__dataclass_fields__ for w in getattr(self, name))


def _words(text: str) -> frozenset[str]:
    """"a, b c, d-e" -> {"a", "b c", "d e"}: entries separated by commas (a hyphen is a
    space, as in the text read: bot.approvals.grammar)."""
    return frozenset(" ".join(w.replace("-", " ").split()).lower() for w in text.split(",")
                     if w.strip())


ENGLISH = AnswerWords(
    yes=frozenset(APPROVE_WORDS) | _words(
        "yea, ya, yes yes, okey, k, kk, alright, all right, absolutely, definitely, "
        "certainly, of course, affirmative, go for it, ✅, 👌, ✔, ✔️"),
    no=frozenset(CANCEL_WORDS) | _words(
        "no no, cancel it, cancel that, forget it, no way, abort, negative, ❌, ✖"),
    courtesy=_words("please, pls, plz, thanks, thank you, thx, ty, cheers, 🙏, 🙂, 😊, 😀, "
                    "😃, 😄, ❤, ❤️"),
    everything=_words("to all, to both, all, both, all of them"),
    edit=_words("change, edit"),
)

SPANISH = AnswerWords(
    yes=_words("sí, si, vale, claro, claro que sí, claro que si, de acuerdo, dale, venga, "
               "adelante, confirmo, por supuesto"),
    no=_words("no, nop, cancela, cancélalo, cancelalo, no lo hagas, déjalo, dejalo, "
              "olvídalo, olvidalo"),
    courtesy=_words("por favor, porfa, gracias, muchas gracias"),
    everything=_words("a todo, a todos, a los dos, todo, todos, los dos"),
    edit=_words("cambia, cambiar"),
)

FRENCH = AnswerWords(
    yes=_words("oui, ouais, ouaip, d'accord, dac, bien sûr, vas-y, allez-y, c'est bon, "
               "je confirme, volontiers"),
    no=_words("non, nan, annule, annule-le, arrête, laisse tomber, surtout pas"),
    courtesy=_words("merci, merci beaucoup, s'il te plaît, s'il te plait, s'il vous plaît, "
                    "s'il vous plait, stp, svp"),
    everything=_words("à tout, pour tout, tout, tous, les deux"),
    edit=_words("change, modifie"),
)

GERMAN = AnswerWords(
    yes=_words("ja, jawohl, jap, jo, klar, na klar, okay, einverstanden, gerne, bestätigt, "
               "genehmigt, in ordnung"),
    no=_words("nein, nee, nö, abbrechen, stopp, lass es, lass das, lieber nicht, "
              "auf keinen fall"),
    courtesy=_words("bitte, danke, danke schön, vielen dank"),
    everything=_words("zu allem, für alle, alle, alles, beide"),
    edit=_words("ändere, änder"),
)

PORTUGUESE = AnswerWords(
    yes=_words("sim, pode, pode ser, claro, claro que sim, com certeza, beleza, certo, "
               "combinado, de acordo, tá bom, ta bom, está bem, esta bem, confirmo"),
    no=_words("não, nao, cancela, cancele, não faça, nao faca, deixa, deixa pra lá, "
              "deixa pra la, esquece, nem pensar"),
    courtesy=_words("por favor, pfv, obrigado, obrigada, valeu"),
    everything=_words("a tudo, a todos, tudo, todos, os dois, ambos"),
    edit=_words("muda, mudar, altera, alterar"),
)

LANGUAGES: dict[str, AnswerWords] = {"en": ENGLISH, "es": SPANISH, "fr": FRENCH,
                                     "de": GERMAN, "pt": PORTUGUESE}


def answer_words(languages: Iterable[str] = ()) -> AnswerWords:
    """English and each language named (unknown ones are refused where the persona is
    loaded: `languages_problem`)."""
    words = ENGLISH
    for code in languages:
        if code != "en":
            words = words | LANGUAGES[code]
    return words


def words_for(base: AnswerWords, language: str | None) -> AnswerWords:
    """What one person's answer is read in: `base` (English and the persona's languages)
    and the person's own language, whichever it is (a person who chose Portuguese on a
    Spanish persona is understood in both, and in English)."""
    if language is None or language not in LANGUAGES or language == "en":
        return base
    return base | LANGUAGES[language]


def languages_problem(languages: Iterable[str]) -> str | None:
    unknown = sorted(set(languages) - set(LANGUAGES))
    if not unknown:
        return None
    return (f"unknown language {', '.join(map(repr, unknown))}; answers to approvals can be "
            f"read in {', '.join(sorted(LANGUAGES))}")
