"""The lines in every language Valet speaks. English is the source and stays where it is
(persona/lines*.py, the fields' defaults); each other language is a table here (es.yaml,
fr.yaml...): the line's key -> its wording, written as a native speaker
would say it, with the same {placeholders} (checked when the table is loaded, as a persona's
line is). A line missing from a table is said in English, and tests/unit/test_catalog.py
fails on it, so a line added to persona/ meanwhile is flagged, not lost.

`SpokenLines` is the persona's `Lines` that answer in the listener's language
(persona.speaking): a part holding the persona's lines says each line in the language of
whom it is speaking to."""

from __future__ import annotations

import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pydantic
import yaml

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


def known(language: str) -> bool:
    return language in LANGUAGES


def language_problem(language: str) -> str | None:
    """Why `language` can't be a person's or a persona's language (None: it can)."""
    if known(language):
        return None
    return f"unknown language {language!r}; Valet speaks {', '.join(LANGUAGES)}"


def table(language: str) -> dict[str, str]:
    """The catalog's wording of each line in `language` (English: empty, the defaults)."""
    if language == SOURCE:
        return {}
    return _read_table(language)


@cache
def _read_table(language: str) -> dict[str, str]:
    loaded = yaml.safe_load((CATALOG_DIR / f"{language}.yaml").read_text(encoding="utf-8"))
    return {str(key): str(line) for key, line in (loaded or {}).items()}


def lines_in(language: str, rewording: dict[str, str] | None = None) -> Lines:
    """Every line in `language`, then a persona's rewording of some of them (ValueError
    naming the line when a placeholder differs)."""
    if not rewording:
        return _catalog_lines(language)
    return Lines(**{**table(language), **rewording})


@cache
def _catalog_lines(language: str) -> Lines:
    return Lines(**table(language))


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


class SpokenLines(Lines):
    """The persona's lines (its own language's, its rewording included) that read each line
    in the listener's language when one is set (persona.speaking)."""

    _languages: dict[str, Lines] = pydantic.PrivateAttr(default_factory=dict)
    _own: str = pydantic.PrivateAttr(default=SOURCE)

    def __getattribute__(self, name: str) -> Any:
        if name in _LINE_NAMES:
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

    def in_language(self, language: str | None) -> Lines:
        """These lines in `language` (None or unknown: the persona's own)."""
        tables = object.__getattribute__(self, "__pydantic_private__")["_languages"]
        return tables.get(language or "", self)


def spoken_lines(language: str, rewording: dict[str, str],
                 translations: dict[str, dict[str, str]] | None = None) -> SpokenLines:
    """A persona's lines: `rewording` (its `lines:`) is in its own `language`; `translations`
    rewords lines per other language."""
    per_language = translations or {}
    tables = {code: lines_in(code, {**(rewording if code == language else {}),
                                    **per_language.get(code, {})})
              for code in LANGUAGES}
    spoken = SpokenLines(**tables[language].model_dump())
    object.__getattribute__(spoken, "__pydantic_private__")["_languages"] = tables
    object.__getattribute__(spoken, "__pydantic_private__")["_own"] = language
    return spoken


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
    if isinstance(lines, SpokenLines):
        return lines.said_in()
    listener = listener_language()
    return listener if listener is not None and known(listener) else SOURCE


def reworded(lines: Lines, text: str) -> str:
    """`text`, one of the persona's own lines kept as a string at start-up (a command's line
    in /help), in the listener's language; any other text as it is."""
    return lines.reworded(text) if isinstance(lines, SpokenLines) else text
