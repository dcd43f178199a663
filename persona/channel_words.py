"""The lines of groups kept outside persona/ (a channel's own words, channels/<name>/lines.py)
in a persona file: persona names no channel, so its caller hands the groups over
(load_persona's `line_groups`, from channels.registry). A persona's `lines:` and
`translations:` then reword their keys as they reword `Lines`', checked the same way: a key
of no group is refused with the nearest one, a placeholder its default lacks with file:line.
What each group then says, in the listener's language, is `Persona.words(group)`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Protocol, TypeVar

from persona.line_group import LineGroup
from persona.lines import Lines

G = TypeVar("G", bound=LineGroup)


class WordsOf(Protocol):
    """What hands a part its group of lines, said in the listener's language: the persona's
    `words` (persona.Persona.words), or the catalog's (persona.catalog.catalog_words)."""

    def __call__(self, group: type[G], /) -> G: ...


def overlaps(groups: Iterable[type[LineGroup]]) -> list[str]:
    """The keys two groups would both have (`Lines` one of them): each key names one line."""
    seen = dict.fromkeys(Lines.model_fields, Lines.__name__)
    clashes = []
    for group in groups:
        for key in group.model_fields:
            if key in seen and seen[key] != group.__name__:
                clashes.append(f"{group.__name__}.{key} (also {seen[key]}'s)")
            seen.setdefault(key, group.__name__)
    return clashes


@cache
def lines_with(groups: tuple[type[LineGroup], ...]) -> type[Lines]:
    """`Lines` and `groups` as one model: what a persona file's `lines:` (and each language of
    its `translations:`) is read as. Its instances are never said: only checked."""
    if not groups:
        return Lines
    return type("PersonaLines", (Lines, *groups), {"__module__": __name__})


def of_group(group: type[LineGroup], lines: Mapping[str, str]) -> dict[str, str]:
    """The lines of `lines` that are `group`'s."""
    return {key: line for key, line in lines.items() if key in group.model_fields}
