"""Issue 43 item 1: the closed answer grammar. Only a message that is exactly an answer of the
table decides a card; every answer of the table still decides it, once. Generated replies:
the red team's 50, every yes and no word in every position of a sentence, every verb of the
old verb list, in every language the persona may list. There is no classifier to ask: the
reading takes no interpreter at all, so an LLM that would say "approve" to everything has no
say (the end-to-end tests also script one: tests/e2e/test_answer_grammar_serve.py)."""

from __future__ import annotations

import inspect
import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.approvals.replies import ParsedReply, Verdict, parse_reply
from bot.contracts.answer_words import ENGLISH, LANGUAGES, answer_words, words_for
from tests.unit.approval_phrasings import (
    ALL,
    ANA,
    EMAIL,
    NOTE,
    NOTE_2,
    RED_TEAM,
    RED_TEAM_CARDS,
)

WORDS = answer_words(ALL)
CARDS = [NOTE, ANA, EMAIL]

# Every verb of the verb list that approved before issue 43 (bot/contracts/answer_words.py
# `doing`, and the yes words that were verbs), and the red team's other actions.
OLD_VERBS = [
    "send", "book", "delete", "post", "pay", "do", "proceed", "text", "email", "message",
    "reply", "forward", "run", "schedule", "buy", "order", "submit", "publish", "share",
    "transfer", "save", "execute", "launch", "go with", "confirm", "approve", "accept",
    "allow", "manda", "envía", "envia", "borra", "reserva", "paga", "haz", "hazlo", "mándalo",
    "mandalo", "envíalo", "envialo", "bórralo", "borralo", "envoie", "envoie-le", "supprime",
    "supprime-le", "réserve", "paie", "fais", "schick", "schicke", "sende", "lösche", "lösch",
    "lösch es", "schick es", "buche", "bezahle", "mach", "mach das", "mach es",
    # Portuguese (issue 49: the table in every language Valet speaks)
    "apaga", "apague", "apaga isso", "envia", "envie", "manda", "salva", "guarda", "reserva",
    "paga", "compra", "encaminha", "exclui", "exclua"]
ACTIONS = ["send", "delete", "save", "book", "text", "email", "forward", "share", "bórralo",
           "supprime-le", "lösch es", "mándalo", "envoie-le", "schick es", "borra", "envoie",
           "supprime", "lösche", "schick", "manda", "post", "pay", "buy", "order", "apaga",
           "envia", "salva"]
OBJECTS = ["it", "the note", "the message", "the email", "Ana", "me", "to me", "the dentist",
           "lo", "le", "es"]
YES_NO = sorted(WORDS.yes | WORDS.no)
COURTESY = sorted(WORDS.courtesy)


def approves(parsed: ParsedReply) -> bool:
    return any(d.verdict is Verdict.APPROVE for d in parsed.decisions)


async def read(text: str, pending=None):
    return await parse_reply(text, list(pending or [NOTE]), words=WORDS)


def test_no_word_of_the_table_names_an_action():
    """"do" stays ("do it", "please do", "do not": they name no action, only the card's)."""
    for code, words in LANGUAGES.items():
        said = {w for entry in words.yes | words.no | words.courtesy | words.everything
                for w in entry.split()}
        for verb in OLD_VERBS:
            if verb in ("confirm", "approve", "do"):
                continue  # the verdict itself, not an action of the world
            assert not set(verb.replace("-", " ").split()) <= said, (code, verb)
    for word in ("bórralo", "supprime le", "lösch es", "send", "delete", "save", "book",
                 "send it", "book it", "mándalo", "envoie le", "schick es"):
        assert word not in WORDS.yes and word not in WORDS.no


async def test_the_persons_own_language_and_english_are_always_understood():
    """A person who chose Portuguese on an English-only persona: "sim" and "yes" approve,
    "não" cancels, "apaga" (delete) decides nothing; someone else's "sim" is not a word."""
    english = answer_words()
    theirs = words_for(english, "pt")
    for text, verdict in (("sim", Verdict.APPROVE), ("yes", Verdict.APPROVE),
                          ("Não!", Verdict.REJECT), ("sim, obrigado", Verdict.APPROVE)):
        parsed = await parse_reply(text, [NOTE], words=theirs)
        assert [d.verdict for d in parsed.decisions] == [verdict], text
    for text in ("apaga", "apaga isso", "envia", "sim apaga"):
        assert (await parse_reply(text, [NOTE], words=theirs)).decisions == [], text
    assert (await parse_reply("sim", [NOTE], words=english)).decisions == []
    assert words_for(english, None) is english and words_for(english, "xx") is english


def test_the_reading_asks_no_classifier():
    """Nothing but the table decides: parse_reply takes no interpreter to ask."""
    assert "interpret" not in inspect.signature(parse_reply).parameters


@pytest.mark.parametrize("text", RED_TEAM)
async def test_the_red_teams_phrasings_decide_nothing(text):
    for card in RED_TEAM_CARDS:
        parsed = await read(text, [card])
        assert parsed.decisions == [] and parsed.clarify is None, (text, card.summary)


# The old verbs that name an action ("approve", "confirm" and "do", as in "do it", are the
# verdict itself: words of the table).
ACTION_VERBS = [v for v in OLD_VERBS if v not in WORDS.phrases and v != "do"]


def _sentences() -> list[str]:
    """Every yes and no word in every position of sentences made with every old verb."""
    found = []
    for said, verb in itertools.product(YES_NO, ACTION_VERBS):
        found += [f"{said} {verb} it", f"{said}, {verb} it", f"{verb} it {said}",
                  f"{verb} it, {said}", f"I {said} {verb} it", f"{said} {verb}",
                  f"{verb} {said}", f"{said} please {verb} the note"]
    return found


SENTENCES = _sentences()


async def test_every_yes_or_no_word_beside_every_old_verb_decides_nothing():
    assert len(SENTENCES) > 5000
    for pending in ([NOTE], [ANA, NOTE_2]):
        for text in SENTENCES:
            parsed = await read(text, pending)
            assert parsed.decisions == [] and parsed.clarify is None, (text, parsed)


# --- generated: anything outside the table decides nothing --------------------------------

OUTSIDE = [*ACTION_VERBS, *ACTIONS, *OBJECTS, "right", "whatever", "oh", "well", "i", "think",
           "so", "now", "later", "maybe", "not", "but", "and", "then", "what", "why", "is",
           "wait", "the", "dentist", "ana", "note", "yes?", "'yes'", '"ok"', "🙄", "😂", "lol",
           "1 more thing", "qué", "pourquoi", "warum", "hmm"]
INSIDE = [*YES_NO, *COURTESY, "1", "2", "4821", "5532", "7310", "to all", ",", ".", "!",
          "👍", "👎"]


@settings(max_examples=3000, deadline=None)
@given(before=st.lists(st.sampled_from(INSIDE), max_size=4),
       outside=st.sampled_from(OUTSIDE),
       after=st.lists(st.sampled_from(INSIDE), max_size=4),
       pending=st.sampled_from([[NOTE], [ANA], [EMAIL], [ANA, NOTE_2], [EMAIL, NOTE_2]]),
       upper=st.booleans())
async def test_a_word_outside_the_table_anywhere_means_nothing_is_decided(
        before, outside, after, pending, upper):
    text = " ".join([*before, outside, *after])
    # The outside word may complete a phrase of the table with its neighbour ("please do" +
    # "it" is "please do it": the yes phrase "do it" and a courtesy word): that text is an
    # answer of the table, not one with a word outside it.
    assume(not any(outside in phrase.split() and f" {phrase} " in f" {text.lower()} "
                   for phrase in WORDS.phrases))
    text = text.upper() if upper else text
    parsed = await read(text, pending)
    assert not approves(parsed), (text, parsed)
    assert parsed.decisions == [] and parsed.clarify is None, (text, parsed)


# --- every answer of the table still decides, once -----------------------------------------

DRESS = [lambda s: s, str.upper, str.title, lambda s: s + "!", lambda s: s + ".",
         lambda s: s + " please", lambda s: "please " + s, lambda s: s + ", thanks",
         lambda s: s + " 🙏", lambda s: "  " + s + "  ", lambda s: s + "!!!"]


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.tool_name)
async def test_every_yes_and_no_of_the_table_decides_its_card_once(card):
    for said, dress in itertools.product(YES_NO, DRESS):
        text = dress(said)
        parsed = await read(text, [card])
        verdict = Verdict.APPROVE if said in WORDS.yes else Verdict.REJECT
        assert [(d.approval_id, d.verdict) for d in parsed.decisions] == \
            [(card.id, verdict)], text


@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.tool_name)
async def test_the_code_and_the_position_forms_decide_their_card_once(card):
    for text in (card.code, f"yes {card.code}", f"{card.code} yes", f"YES {card.code}!",
                 f"ok {card.code}", "1 yes", "#1 yes", "1: yes", f"{card.code} ok thanks"):
        parsed = await read(text, [card])
        assert [(d.approval_id, d.verdict) for d in parsed.decisions] == \
            [(card.id, Verdict.APPROVE)], text
    for text in (f"no {card.code}", f"{card.code} no", "1 no", f"{card.code} cancel"):
        parsed = await read(text, [card])
        assert [(d.approval_id, d.verdict) for d in parsed.decisions] == \
            [(card.id, Verdict.REJECT)], text


async def test_the_batch_form_decides_each_card_once():
    pending = [ANA, NOTE_2]
    for text in ("1 yes 2 no", f"{ANA.code} yes {NOTE_2.code} no", f"yes {ANA.code} 2 no"):
        parsed = await read(text, pending)
        assert [(d.approval_id, d.verdict) for d in parsed.decisions] == [
            (ANA.id, Verdict.APPROVE), (NOTE_2.id, Verdict.REJECT)], text
    parsed = await read("yes to all", pending)
    assert [(d.approval_id, d.verdict) for d in parsed.decisions] == [
        (ANA.id, Verdict.APPROVE), (NOTE_2.id, Verdict.APPROVE)]


@pytest.mark.parametrize("language", sorted(LANGUAGES))
async def test_each_language_of_the_persona_answers_only_when_listed(language):
    words = LANGUAGES[language]
    for said in sorted(words.yes - ENGLISH.yes):
        alone = await parse_reply(said, [NOTE], words=answer_words([language]))
        assert [d.verdict for d in alone.decisions] == [Verdict.APPROVE], said
        if language != "en":
            english_only = await parse_reply(said, [NOTE], words=answer_words())
            assert english_only.decisions == [], said


def _documented() -> dict[str, list[set[str]]]:
    """docs/approvals.md's table of words: language -> [yes, no, courtesy, every card, edit],
    "approve(d)" read as "approve" and "approved", emoji apart."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "approvals.md").read_text()
    found = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] not in LANGUAGES:
            continue
        columns = []
        for cell in cells[1:]:
            entries: set[str] = set()
            for entry in (e.strip() for e in cell.split(",")):
                words = entry.split() if all(not w.isascii() and len(w) <= 2
                                             for w in entry.split()) else [entry]
                for word in words:
                    if word.endswith(")") and "(" in word:
                        stem, extra = word[:-1].split("(")
                        entries |= {stem, stem + extra}
                    else:
                        entries.add(word)
            columns.append({" ".join(e.lower().replace("-", " ").split()) for e in entries})
        found[cells[0]] = columns
    return found


def test_the_documented_table_is_the_table():
    documented = _documented()
    assert sorted(documented) == sorted(LANGUAGES)
    for code, words in LANGUAGES.items():
        data = [words.yes, words.no, words.courtesy, words.everything, words.edit]
        for wrote, has in zip(documented[code], data, strict=True):
            variants = {w.replace("\ufe0f", "") for w in has}
            assert wrote <= variants, (code, wrote - variants)
            loose = {w for w in variants if w.replace("'", "") not in
                     {x.replace("'", "") for x in wrote}}
            # Spelling variants without accents or apostrophes ("si", "dont") need no row.
            assert all(_plain(w) in {_plain(x) for x in wrote} for w in loose), (code, loose)


def _plain(word: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFD", word)
                   if unicodedata.category(c) != "Mn").replace("'", "")
