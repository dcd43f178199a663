"""The lines in every language Valet speaks. English is the source and stays where it is
(persona/lines*.py, the fields' defaults); each other language is a table here (es.yaml,
fr.yaml...): the line's key -> its wording, written as a native speaker
would say it, with the same {placeholders} (checked when the table is loaded, as a persona's
line is). A line missing from a table is said in English, and tests/unit/test_catalog.py
fails on it, so a line added to persona/ meanwhile is flagged, not lost.

A group of lines kept outside persona/ (a channel's: channels/whatsapp/lines.py) names its own
folder of such tables (`LineGroup.translations_dir`), read here the same way.

`Spoken` makes a group answer in the listener's language (persona.speaking): `SpokenLines` is
the persona's `Lines` so made, `spoken_words` any other group (a channel's), so a part
holding them says each line in the language of whom it is speaking to."""

from __future__ import annotations

import unicodedata
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import pydantic
import yaml

from persona.line_group import LineGroup
from persona.lines import Lines, fill
from persona.speaking import listener_language

SOURCE = "en"
CATALOG_DIR = Path(__file__).parent
LANGUAGES = ("en", "es", "fr", "de", "pt")
# Each language's name in itself (what a person reads: "¿... en español?") and in English
# (what the model reads: "Answer in Spanish").
OWN_NAMES = {"en": "English", "es": "español", "fr": "français", "de": "Deutsch",
             "pt": "português"}
ENGLISH_NAMES = {"en": "English", "es": "Spanish", "fr": "French", "de": "German",
                 "pt": "Portuguese"}
# The locale of dates, times and numbers (Babel) for each language.
LOCALES = {"en": "en", "es": "es", "fr": "fr", "de": "de", "pt": "pt"}
_LINE_NAMES = frozenset(Lines.model_fields)
G = TypeVar("G", bound=LineGroup)


def known(language: str) -> bool:
    return language in LANGUAGES


def language_problem(language: str) -> str | None:
    """Why `language` can't be a person's or a persona's language (None: it can)."""
    if known(language):
        return None
    return f"unknown language {language!r}; Valet speaks {', '.join(LANGUAGES)}"


def table(language: str, folder: Path = CATALOG_DIR) -> dict[str, str]:
    """The wording of each line in `language` of the tables in `folder` (the catalog's, or
    a group's own: `LineGroup.translations_dir`); English: empty, the defaults."""
    if language == SOURCE:
        return {}
    return _read_table(folder, language)


@cache
def _read_table(folder: Path, language: str) -> dict[str, str]:
    path = folder / f"{language}.yaml"
    if folder != CATALOG_DIR and not path.exists():
        return {}  # a group not yet written in this language: English (its test fails)
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {str(key): str(line) for key, line in (loaded or {}).items()}


def group_table(group: type[LineGroup], language: str) -> dict[str, str]:
    """The wording in `language` of `group`'s lines: its own tables when it names a folder,
    else the catalog's lines that are its."""
    if group.translations_dir is not None:
        return table(language, group.translations_dir)
    return {key: line for key, line in table(language).items() if key in group.model_fields}


def lines_in(language: str, rewording: dict[str, str] | None = None) -> Lines:
    """Every line in `language`, then a persona's rewording of some of them (ValueError
    naming the line when a placeholder differs)."""
    if not rewording:
        return _catalog_lines(language)
    return Lines(**{**table(language), **rewording})


@cache
def _catalog_lines(language: str) -> Lines:
    return Lines(**table(language))


def words_in(group: type[G], language: str, rewording: dict[str, str] | None = None) -> G:
    """`lines_in` for any group: its lines in `language`, then a rewording of some."""
    if group is Lines:
        return cast(G, lines_in(language, rewording))
    return group(**{**group_table(group, language), **(rewording or {})})


def say(key: str, **values: Any) -> str:
    """Line `key` of the catalog in the listener's language, filled (for parts that hold no
    persona: agents' questions)."""
    language = listener_language() or SOURCE
    return fill(getattr(_catalog_lines(language if known(language) else SOURCE), key), **values)


def said_label(label: str) -> str:
    """An agent's label ("reminder", the {task} of the task lines) as the listener names it:
    its line (task_label_reminder); a label with none is itself in English and
    task_label_other ("tarea") in other languages."""
    key = "task_label_" + "_".join(label.lower().split())
    if key in _LINE_NAMES:
        return say(key)
    language = listener_language() or SOURCE
    return label if language == SOURCE or not known(language) else say("task_label_other")


class Spoken(LineGroup):
    """Mixed in before a group of lines (`Spoken<Group>`): its lines (the persona's own
    language's, its rewording included) read each line in the listener's language when one
    is set (persona.speaking). One instance holds the group in every language."""

    # The names read in the listener's language: the group's fields, set per class so the
    # check on every attribute read is one set lookup.
    line_names: ClassVar[frozenset[str]] = frozenset()
    _languages: dict[str, LineGroup] = pydantic.PrivateAttr(default_factory=dict)
    _own: str = pydantic.PrivateAttr(default=SOURCE)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.line_names = frozenset(cls.model_fields)

    def __getattribute__(self, name: str) -> Any:
        if name in type(self).line_names:
            language = listener_language()
            if language is not None:
                other = object.__getattribute__(self, "__pydantic_private__")["_languages"]\
                    .get(language)
                if other is not None:
                    return getattr(other, name)
        return super().__getattribute__(name)

    def reworded(self, text: str) -> str:
        """`text`, when it is one of these lines in the persona's own language, in the
        listener's; anything else as it is."""
        own = object.__getattribute__(self, "__dict__")
        for key, line in own.items():
            if line == text:
                return str(getattr(self, key))
        return text

    def said_in(self) -> str:
        """The language these lines are said in now: the listener's, else the persona's."""
        listener = listener_language()
        private = object.__getattribute__(self, "__pydantic_private__")
        return listener if listener is not None and listener in private["_languages"] \
            else str(private["_own"])

    def in_language(self, language: str | None) -> LineGroup:
        """These lines in `language` (None or unknown: the persona's own)."""
        tables = object.__getattribute__(self, "__pydantic_private__")["_languages"]
        return cast(LineGroup, tables.get(language or "", self))


class SpokenLines(Spoken, Lines):
    """The persona's `Lines`, said in the listener's language."""

    def in_language(self, language: str | None) -> Lines:
        return cast(Lines, super().in_language(language))


@cache
def spoken_class(group: type[LineGroup]) -> type[Spoken]:
    """`group` made to answer in the listener's language: `Spoken<Group>`, one class per
    group (SpokenLines for `Lines`)."""
    if group is Lines:
        return SpokenLines
    return cast(type[Spoken], type(f"Spoken{group.__name__}", (Spoken, group),
                                   {"__module__": __name__}))


def spoken_words(group: type[G], language: str, rewording: dict[str, str],
                 translations: dict[str, dict[str, str]] | None = None) -> G:
    """`group` as a persona says it: `rewording` (its `lines:` of this group) is in its own
    `language`; `translations` rewords lines per other language; every other line is the
    group's table in each language (ValueError naming a line whose placeholders differ)."""
    per_language = translations or {}
    tables = {code: words_in(group, code, {**(rewording if code == language else {}),
                                           **per_language.get(code, {})})
              for code in LANGUAGES}
    spoken = spoken_class(group)(**tables[language].model_dump())
    private = object.__getattribute__(spoken, "__pydantic_private__")
    private["_languages"] = tables
    private["_own"] = language
    return cast(G, spoken)


def spoken_lines(language: str, rewording: dict[str, str],
                 translations: dict[str, dict[str, str]] | None = None) -> SpokenLines:
    """A persona's lines: `rewording` (its `lines:`) is in its own `language`; `translations`
    rewords lines per other language."""
    return cast(SpokenLines, spoken_words(Lines, language, rewording, translations))


_CATALOG_WORDS: dict[type[LineGroup], LineGroup] = {}


def catalog_words(group: type[G]) -> G:
    """`group` as no persona rewords it, in the listener's language (a part built without a
    persona: tests, tools)."""
    if group not in _CATALOG_WORDS:
        _CATALOG_WORDS[group] = spoken_words(group, SOURCE, {})
    return cast(G, _CATALOG_WORDS[group])


def language_named(text: str) -> str | None:
    """The language a person names: its code ("es"), its own name ("español", "espanol") or
    its English one ("Spanish"); None when it is none Valet speaks."""
    word = _plain(text.strip().lower())
    for code in LANGUAGES:
        if word in (code, _plain(OWN_NAMES[code].lower()), ENGLISH_NAMES[code].lower()):
            return code
    return None


def _plain(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


def said_in(lines: Any) -> str:
    """The language `lines` are said in now (a persona's: the listener's or its own; the
    defaults: the listener's, or English)."""
    if isinstance(lines, Spoken):
        return lines.said_in()
    listener = listener_language()
    return listener if listener is not None and known(listener) else SOURCE


def reworded(lines: Lines, text: str) -> str:
    """`text`, one of the persona's own lines kept as a string at start-up (a command's line
    in /help), in the listener's language; any other text as it is."""
    return lines.reworded(text) if isinstance(lines, SpokenLines) else text
