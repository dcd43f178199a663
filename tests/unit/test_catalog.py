"""The catalog (persona/catalog/): every line of persona/ in every language Valet speaks,
with the same placeholders, rendering on every channel; a line added in English meanwhile is
flagged here until it is written in each language. The same for each channel's own lines
(channels/<name>/lines.py, their translations beside them), taken from the registry. And
what a person reads by SMS costs, in segments, per language (the table is printed:
`pytest -s`)."""

from __future__ import annotations

import pytest

from bot.contracts.envelopes import OutboundMessage
from channels.console.channel import render as console_render
from channels.registry import specs
from channels.sms.plain_letters import plain_letters
from channels.sms.render import render as sms_render
from channels.telegram.render import message_html
from persona import load_persona
from persona.catalog import (
    CATALOG_DIR,
    LANGUAGES,
    SOURCE,
    lines_in,
    spoken_lines,
    table,
    words_in,
)
from persona.channel_words import overlaps
from persona.line_group import PLACEHOLDER, LineGroup, placeholders
from persona.lines import Lines
from persona.speaking import speaking_to
from tests.bench.sms_lines import sample, segment_table

OTHERS = [code for code in LANGUAGES if code != SOURCE]
# Every group of lines with tables of its own: persona's `Lines` (persona/catalog/), then each
# channel's own (channels.registry: its spec's `lines`, translated in its package).
GROUPS: list[type[LineGroup]] = [Lines, *specs().line_groups()]
EACH_GROUP = pytest.mark.parametrize("group", GROUPS, ids=lambda group: group.__name__)


def tables_of(group: type[LineGroup], language: str) -> dict[str, str]:
    """The group's table in `language` as its file has it (nothing left out)."""
    return table(language, group.translations_dir or CATALOG_DIR)


def test_the_registry_hands_over_channel_groups_that_own_their_translations():
    channel_groups = GROUPS[1:]
    assert channel_groups, "no channel owns its words: the registry lost them"
    for group in channel_groups:
        assert group.translations_dir is not None, group.__name__
        assert group.translations_dir.is_dir(), group.translations_dir
    assert overlaps(channel_groups) == []  # a key names one line, whoever owns it


@EACH_GROUP
@pytest.mark.parametrize("language", OTHERS)
def test_every_line_exists_in_every_language(language, group):
    missing = sorted(set(group.model_fields) - set(tables_of(group, language)))
    unknown = sorted(set(tables_of(group, language)) - set(group.model_fields))
    assert missing == [], f"{language}: lines not translated yet: {missing}"
    assert unknown == [], f"{language}: lines that {group.__name__} does not have: {unknown}"


@EACH_GROUP
@pytest.mark.parametrize("language", OTHERS)
def test_every_line_keeps_its_placeholders(language, group):
    english = group()
    wrong = {key: (sorted(placeholders(line)), sorted(placeholders(getattr(english, key))))
             for key, line in tables_of(group, language).items()
             if placeholders(line) != placeholders(getattr(english, key))}
    assert wrong == {}
    words_in(group, language)  # the same check, as a persona's line gets it


@EACH_GROUP
@pytest.mark.parametrize("language", OTHERS)
def test_a_translation_is_not_the_english_line_left_as_it_is(language, group):
    english = group()
    # Code words read back in every language, and lines that are only placeholders.
    same_everywhere = {"pairing_approve_word", "pairing_deny_word", "pairing_owner_item",
                       "approval_card"}
    untranslated = [key for key, line in tables_of(group, language).items()
                    if line == getattr(english, key) and key not in same_everywhere
                    and any(c.isalpha() for c in PLACEHOLDER.sub("", line))
                    and len(line.split()) > 1]
    assert untranslated == [], f"{language}: still English: {untranslated}"


@EACH_GROUP
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_line_renders_for_every_channel(language, group):
    lines = words_in(group, language)
    for key in group.model_fields:
        said = sample(getattr(lines, key))
        message = OutboundMessage(1, "u1", "sms", "+15550001", said)
        assert "".join(b.text for b in sms_render(message)).strip() or not said.strip(), key
        assert message_html(said, ()) or not said.strip(), key
        assert console_render(message) or not said.strip(), key


def test_the_persona_says_each_line_in_the_listeners_language(tmp_path):
    persona = load_persona("default")
    with speaking_to("de"):
        assert persona.lines.reminder == lines_in("de").reminder
        assert persona.lines.llm_unavailable == lines_in("de").llm_unavailable
    with speaking_to("es"):
        assert persona.lines.help_text.startswith("Comandos:")
    assert persona.lines.reminder == Lines().reminder  # nobody in particular: its own
    # A persona's own rewording, and its translation, for the listener of that language.
    path = tmp_path / "reworded.yaml"
    path.write_text("name: R\nsystem_prompt: You help.\nlanguage: en\n"
                    "lines:\n  llm_unavailable: Brain away.\n"
                    "translations:\n  de:\n    llm_unavailable: Gehirn weg.\n",
                    encoding="utf-8")
    reworded = load_persona(str(path))
    with speaking_to("de"):
        assert reworded.lines.llm_unavailable == reworded.translations["de"]["llm_unavailable"]
        assert reworded.lines.llm_unavailable == "Gehirn weg."
    assert reworded.lines.llm_unavailable == "Brain away."


def test_the_default_persona_rewords_no_line():
    """Its lines are the defaults, in one place (persona/lines*.py and persona/catalog/):
    editing a default changes what the default persona says."""
    persona = load_persona("default")
    own = {key for key, line in persona.lines.model_dump().items() if line != getattr(Lines(),
                                                                                       key)}
    assert own == set()
    assert not persona.translations


@pytest.mark.parametrize("name", ["jeeves"])  # every shipped persona that rewords lines
def test_every_reworded_line_of_a_shipped_persona_is_reworded_in_every_language(name):
    persona = load_persona(name)
    reworded = set(persona.lines.model_fields_set) - {"_languages"}
    own = {key for key, line in persona.lines.model_dump().items() if line != getattr(Lines(),
                                                                                       key)}
    assert own, reworded
    for language in OTHERS:
        assert own <= set(persona.translations.get(language, {})), language


def test_a_persona_rewording_in_its_own_language_is_not_said_in_another():
    spoken = spoken_lines("en", {"cancelled": "Stopped, as you wish."})
    assert spoken.cancelled == "Stopped, as you wish."
    with speaking_to("fr"):
        assert spoken.cancelled == lines_in("fr").cancelled


def test_the_sms_segments_of_every_line_per_language(capsys):
    rows = segment_table()
    with capsys.disabled():
        print("\nlanguage  lines  segments  plain-letters  UCS-2 lines  UCS-2 with plain")
        for language, count, raw, plain, ucs, ucs_plain in rows:
            print(f"{language:8}  {count:5}  {raw:8}  {plain:13}  {ucs:11}  {ucs_plain:16}")
    by_language = {row[0]: row for row in rows}
    # German is written in GSM-7 (ä ö ü ß are in it): plain letters change nothing there.
    assert by_language["de"][2] == by_language["de"][3]
    for language, _, raw, plain, _, _ in rows:
        assert plain <= raw, language
    # With plain letters every line is GSM-7 (emoji are dropped by SMS unless the persona
    # allows them; curly quotes fold to straight ones).
    assert [row[5] for row in rows] == [0] * len(rows)


def test_plain_letters_replace_only_letters_gsm7_lacks():
    assert plain_letters("¿Mañana a las 15:00? Sí, ação, garçon, Œuvre, Straße") == \
        "¿Mañana a las 15:00? Si, acao, garcon, OEuvre, Straße"
    assert plain_letters("“quoted” — ⏰ Привет") == "“quoted” — ⏰ Привет"


def test_jeeves_says_his_own_lines_in_each_language_and_the_catalog_the_rest():
    jeeves = load_persona("jeeves")
    with speaking_to("de"):
        assert jeeves.lines.cancelled == "Sehr wohl. Ich habe aufgehört."
        assert jeeves.lines.reminder == lines_in("de").reminder  # not his: the catalog's
    with speaking_to("es"):
        assert jeeves.lines.sms_more == "(Responda MAS y proseguiré.)"
    assert jeeves.lines.cancelled == "Very good. I have stopped."
