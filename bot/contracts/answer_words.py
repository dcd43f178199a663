"""The words an answer to "may I?" is made of, per language the persona speaks.

Data only: bot/approvals/rules.py reads a message with them. English comes first and always
(the options' own yes and no words, bot.contracts.options, are its core: one table for every
channel); a persona that lists more languages (`languages: [en, es]`) adds theirs, so a
person may mix them ("ok gracias"). Phrases of several words are written with spaces and
matched as one word ("go ahead", "por favor", "est ce que").

A word belongs here only when it means the same whatever follows it. "fine", "great" or
"perfect" may greet the news rather than answer the question: they are `soft`, and a message
made of them goes to the classifier, never straight to a decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.contracts.options import APPROVE_WORDS, CANCEL_WORDS


@dataclass(frozen=True)
class AnswerWords:
    yes: frozenset[str] = frozenset()
    no: frozenset[str] = frozenset()
    courtesy: frozenset[str] = frozenset()  # "please", "thanks": they change nothing
    filler: frozenset[str] = frozenset()  # "it", "the", "now": allowed in an answer
    leading: frozenset[str] = frozenset()  # "oh", "well": skipped before a clause's head
    joining: frozenset[str] = frozenset()  # "and", "but": one clause ends, another starts
    everything: frozenset[str] = frozenset()  # "all", "both": every request at once
    # A clause that opens with one of these is a question ("what", "is", "can")...
    asking: frozenset[str] = frozenset()
    # ...and one that opens with one of these followed by a person is too ("do you",
    # "will it"): alone they may be part of an answer ("do it", "will do").
    asking_with_person: frozenset[str] = frozenset()
    persons: frozenset[str] = frozenset()
    # Verbs that name the action: "send it", "delete the note" approve; "don't send" not.
    doing: frozenset[str] = frozenset()
    # Verbs that ask for a change. `changing_first` open a change on their own ("change the
    # subject to Q3"); `changing` only beside a yes or no ("yes but add a line") or when the
    # clause names the request ("add Bob to the email").
    changing: frozenset[str] = frozenset()
    changing_first: frozenset[str] = frozenset()
    soft: frozenset[str] = frozenset()  # assent that may not be an answer: the classifier

    def __or__(self, other: AnswerWords) -> AnswerWords:
        return AnswerWords(**{name: getattr(self, name) | getattr(other, name)
                              for name in self.__dataclass_fields__})

    @property
    def phrases(self) -> frozenset[str]:
        """Every entry of several words, to be read as one."""
        return frozenset(w for name in self.__dataclass_fields__
                         for w in getattr(self, name) if " " in w)


def _words(text: str) -> frozenset[str]:
    """"a, b c, d-e" -> {"a", "b c", "d e"}: entries separated by commas (a hyphen is a
    space, as in the text read: bot.approvals.reply_words.tokens)."""
    return frozenset(" ".join(w.replace("-", " ").split()) for w in text.split(",")
                     if w.strip())


ENGLISH = AnswerWords(
    yes=frozenset(APPROVE_WORDS) | _words(
        "yea, ya, yah, yas, yass, yess, yesss, yeh, k, kk, okie, oki, okey, okey dokey, "
        "alright, all right, absolutely, definitely, certainly, of course, affirmative, "
        "go for it, agreed, proceed, do so, ✅, 👌, ✔, ✔️"),
    no=frozenset(CANCEL_WORDS) | _words(
        "❌, ✖, abort, forget it, scrap it, scrap that, drop it, no way, hold off, not, "
        "negative"),
    courtesy=_words("please, pls, plz, thanks, thank you, thx, ty, cheers, 🙏, 🙂, 😊"),
    filler=_words(
        "it, that, this, them, those, these, one, ones, the, a, an, to, for, of, on, with, "
        "go, ahead, right, away, too, just, again, as well, i, me, my, you, your, "
        ":, -, =, ), #"),
    leading=_words("oh, well, hmm, hm, um, uh, ah, so, hey, haha, lol"),
    joining=_words("and, but, then, also, plus, though, however, although, except"),
    everything=_words("all, both, everything, each, every one, all of them"),
    asking=_words(
        "what, what's, whats, which, when, when's, where, where's, who, who's, whom, whose, "
        "why, why's, how, how's, is, isn't, are, aren't, am, was, wasn't, were, weren't, "
        "can, can't, could, couldn't, would, wouldn't, shall, should, shouldn't, does, "
        "doesn't, did, didn't, may, might, any idea"),
    asking_with_person=_words("do, will, won't, have, has, had, haven't, hasn't"),
    persons=_words("i, you, we, they, he, she, it, u, there, anyone, someone"),
    doing=_words(
        "send, book, delete, post, pay, do, proceed, text, email, message, reply, "
        "forward, run, schedule, buy, order, submit, publish, share, transfer, save, "
        "execute, launch, go with, confirm, approve, accept, allow"),
    changing=_words(
        "change, make, edit, modify, set, rename, replace, use, add, remove, update, "
        "switch, swap, fix, correct, move, put, include, exclude, shorten, instead"),
    changing_first=_words("change, edit, modify, rename, replace, make it, make the, "
                          "set the, set it"),
    soft=_words(
        "fine, great, perfect, cool, nice, good, sounds good, looks good, lgtm, works for "
        "me, that works, that's fine, it's fine, that's ok, thats fine, sgtm, correct, "
        "exactly"),
)

SPANISH = AnswerWords(
    yes=_words("sí, si, vale, claro, claro que sí, de acuerdo, dale, venga, adelante, "
               "hazlo, mándalo, mandalo, envíalo, envialo, bórralo, borralo, confirmo, "
               "perfecto vale, por supuesto"),
    no=_words("no, nop, cancela, cancélalo, cancelalo, no lo hagas, déjalo, dejalo, "
              "olvídalo, olvidalo"),
    courtesy=_words("por favor, porfa, gracias, muchas gracias"),
    filler=_words("lo, la, el, los, las, eso, esto"),
    leading=_words("bueno, pues, oye, ah, eh"),
    joining=_words("pero, luego, también, aunque"),
    everything=_words("todo, todos, todas, ambos, ambas, los dos, las dos"),
    asking=_words("qué, cuál, cuáles, cuándo, dónde, quién, quiénes, cómo, por qué, cuánto, "
                  "cuánta, cuántos, está, están, puedes, tienes, hay, sabes"),
    doing=_words("manda, envía, envia, borra, reserva, paga, haz"),
    changing=_words("cambia, cambiar, pon, quita, añade, usa, mejor"),
    changing_first=_words("cambia, cambiar"),
    soft=_words("bien, genial, perfecto, bueno"),
)

FRENCH = AnswerWords(
    yes=_words("oui, ouais, ouaip, d'accord, dac, bien sûr, vas y, allez y, vas-y, "
               "allez-y, c'est bon, envoie, envoie le, supprime le, je confirme, volontiers"),
    no=_words("non, nan, annule, annule le, arrête, laisse tomber, pas, surtout pas"),
    courtesy=_words("merci, merci beaucoup, s'il te plaît, s'il te plait, s'il vous plaît, "
                    "s'il vous plait, stp, svp"),
    filler=_words("le, la, les, ça, ca, cela"),
    leading=_words("bon, ben, alors, euh, ah, oh"),
    joining=_words("mais, et, puis, aussi"),
    everything=_words("tout, tous, toutes, les deux"),
    asking=_words("quoi, que, qu'est, qu'est-ce, est ce que, est-ce que, est ce, est-ce, "
                  "quel, quelle, quels, quelles, quand, où, qui, comment, pourquoi, combien, "
                  "c'est quoi, peux, pouvez, as, avez, y a t il"),
    doing=_words("envoie, supprime, réserve, reserve, paie, fais"),
    changing=_words("change, changer, mets, remplace, ajoute, enlève, enleve, plutôt, plutot"),
    changing_first=_words("change, changer, remplace"),
    soft=_words("bien, super, parfait, génial, genial, nickel"),
)

GERMAN = AnswerWords(
    yes=_words("ja, jawohl, jap, jo, klar, na klar, okay, einverstanden, gerne, mach, "
               "mach das, mach es, mach's, schick es, schick's, lösch es, bestätigt, "
               "genehmigt, in ordnung"),
    no=_words("nein, nee, ne, nö, abbrechen, stopp, lass es, lass das, lieber nicht, nicht, "
              "auf keinen fall"),
    courtesy=_words("bitte, danke, danke schön, vielen dank"),
    filler=_words("es, das, den, die"),
    leading=_words("also, naja, ach, äh, oh"),
    joining=_words("aber, und, dann, auch"),
    everything=_words("alle, alles, beide"),
    asking=_words("was, wer, wann, wo, wie, warum, wieso, weshalb, welche, welcher, welches, "
                  "ist, sind, kannst, kann, hast, hat, gibt, soll, sollen, wird, wirst"),
    doing=_words("schick, schicke, sende, lösche, lösch, buche, bezahle"),
    changing=_words("ändere, änder, ersetze, nimm, füge, statt, stattdessen"),
    changing_first=_words("ändere, änder, ersetze"),
    soft=_words("gut, super, prima, passt, perfekt"),
)

LANGUAGES: dict[str, AnswerWords] = {"en": ENGLISH, "es": SPANISH, "fr": FRENCH,
                                     "de": GERMAN}


def answer_words(languages: Iterable[str] = ()) -> AnswerWords:
    """English and each language named (unknown ones are refused where the persona is
    loaded: `languages_problem`)."""
    words = ENGLISH
    for code in languages:
        if code != "en":
            words = words | LANGUAGES[code]
    return words


def languages_problem(languages: Iterable[str]) -> str | None:
    unknown = sorted(set(languages) - set(LANGUAGES))
    if not unknown:
        return None
    return (f"unknown language {', '.join(map(repr, unknown))}; answers to approvals can be "
            f"read in {', '.join(sorted(LANGUAGES))}")
