"""A tool's JSON schema from its Python function: the docstring's description and
parameter lines, and pydantic's schema without what tells the model nothing."""

from __future__ import annotations

import re
from typing import Any


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles: they cost tokens and tell the model nothing."""
    if isinstance(schema, dict):
        return {k: clean_schema(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [clean_schema(v) for v in schema]
    return schema


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The `$defs` put in place of each `$ref` (some OpenAI-compatible servers reject $ref);
    a schema whose definitions refer to themselves is left as it is."""
    defs = schema.get("$defs")
    if not defs:
        return schema

    def walk(node: Any, inside: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.rsplit("/", 1)[-1]
                if name in inside:
                    raise RecursionError(name)
                return walk(defs[name], (*inside, name))
            return {k: walk(v, inside) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, inside) for v in node]
        return node

    try:
        return walk({k: v for k, v in schema.items() if k != "$defs"}, ())
    except RecursionError:
        return schema


_PARAM_LINE = re.compile(r"(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a Google-style docstring. The description is
    all the text before the first Args/Returns/Raises section."""
    sections = re.split(r"^\s*(Args|Arguments|Parameters|Returns|Raises):\s*$", doc,
                        flags=re.MULTILINE)
    summary = " ".join(sections[0].split())
    params: dict[str, str] = {}
    for header, body in zip(sections[1::2], sections[2::2], strict=False):
        if header not in ("Args", "Arguments", "Parameters"):
            continue
        base_indent: int | None = None
        current = None
        for line in body.splitlines():
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            match = _PARAM_LINE.fullmatch(line.strip())
            if match and (base_indent is None or indent <= base_indent):
                base_indent, current = indent, match.group(1)
                params[current] = match.group(2).strip()
            elif current:
                params[current] += " " + line.strip()
    return summary, params
