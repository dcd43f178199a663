"""The words of the registry's capabilities, checked when it loads (bot.tools.capability_router
reads them): a deployment's file may add words to a capability declared in another file (an
entry with only `name`, `keywords`, `examples`, `parts`); a part names tools of its own
capability; a keyword has words to match; and every example opens the capability (or part) it is
given for, so the examples are the router's own test, for the built-in words and a deployment's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from bot.tools.capabilities import CapabilityPart, CapabilitySpec
from bot.tools.capability_router import CapabilityRouter, Route, phrase_pattern


class Where(Protocol):
    """`file:line` of a registry entry, or of one of its keys."""

    @property
    def entry(self) -> tuple[str, ...]: ...

    def __call__(self, *keys: str) -> str: ...


@dataclass(frozen=True)
class CapabilityWords:
    """A registry entry that adds words to a capability declared elsewhere."""

    name: str
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    parts: tuple[CapabilityPart, ...] = ()


def check_words(capabilities: MutableMapping[str, CapabilitySpec],
                added: Sequence[tuple[CapabilityWords, Where]],
                declared: Mapping[str, Where]) -> list[str]:
    """Merge the added words into `capabilities`; every problem as `file:line: key: what`,
    an example's at the entry that gives it."""
    errors: list[str] = []
    # Whose examples are checked where: each declaration's own, then each added entry's.
    sources = [(CapabilityWords(name, (), spec.examples, spec.parts), declared[name])
               for name, spec in capabilities.items() if name in declared]
    for name, spec in capabilities.items():
        if name in declared:
            errors += _words_problems(name, spec.keywords, spec.parts, spec, declared[name])
    for words, where in added:
        found = capabilities.get(words.name)
        if found is None:
            known = ", ".join(capabilities) or "none declared"
            errors.append(f"{where('name')}: {_key(where, 'name')}: unknown capability "
                          f"{words.name!r} (declared: {known}); a new capability needs a "
                          "summary")
            continue
        capabilities[words.name] = replace(
            found, keywords=(*found.keywords, *words.keywords),
            examples=(*found.examples, *words.examples), parts=(*found.parts, *words.parts))
        errors += _words_problems(words.name, words.keywords, words.parts, found, where)
        sources.append((words, where))
    router = CapabilityRouter(capabilities)
    for words, where in sources:
        errors += _example_problems(router, words, where)
    return errors


def _words_problems(name: str, keywords: Sequence[str], parts: Sequence[CapabilityPart],
                    spec: CapabilitySpec, where: Where) -> list[str]:
    """Problems of the words one entry gives (`spec`: the capability they are for)."""
    errors = []
    for keyword in (*keywords, *(k for p in parts for k in p.keywords)):
        if not phrase_pattern(keyword):
            errors.append(f"{where('keywords')}: {_key(where, 'keywords')}: {keyword!r} has "
                          "no word the router can match")
    for i, part in enumerate(parts):
        strangers = [t for t in part.tools if not _is_tool_of(spec, t)]
        if strangers:
            errors.append(f"{where('parts', str(i), 'tools')}: "
                          f"{_key(where, 'parts', str(i), 'tools')}: "
                          f"{', '.join(map(repr, strangers))} not a tool of {name} (its "
                          f"tools: {', '.join(spec.tools) or 'none'})")
    return errors


def _is_tool_of(spec: CapabilitySpec, tool: str) -> bool:
    return tool in spec.tools or (spec.source is not None and tool.startswith(spec.source.prefix))


def _example_problems(router: CapabilityRouter, words: CapabilityWords, where: Where
                      ) -> list[str]:
    errors = []
    for example in words.examples:
        route = router.route(example)
        if words.name not in route.opened:  # whole, or one of its parts
            errors.append(_unopened(where, ("examples",), example, words.name, route))
    for i, part in enumerate(words.parts):
        for example in part.examples:
            route = router.route(example)
            if words.name not in route.groups and not set(part.tools) <= route.tools:
                errors.append(_unopened(where, ("parts", str(i), "examples"), example,
                                        f"{words.name} ({', '.join(part.tools)})", route))
    return errors


def _unopened(where: Where, keys: Iterable[str], example: str, wanted: str, route: Route
              ) -> str:
    keys = tuple(keys)
    if route.unsure:
        found = f"it names too many capabilities to be sure ({', '.join(route.unsure)})"
    elif route.named:
        found = "it opens " + ", ".join(route.named)
    else:
        found = "no keyword matches it"
    return (f"{where(*keys)}: {_key(where, *keys)}: the example {example!r} does not open "
            f"{wanted}: {found}; add a keyword it contains")


def _key(where: Where, *keys: str) -> str:
    return ".".join((*where.entry, *keys))
