"""Every request to the fake Bot API held against the Bot API itself, as a machine-readable
spec (PaulSonOfLars/telegram-bot-api-spec, MIT; reference data outside the project, found by
`reference_data`): the method exists, every required parameter is there, no parameter the
method does not take, and each value has the type the spec gives (objects field by field,
arrays item by item, a union by any of its kinds), with the limits the spec states in words
("1-4096 characters", "1-64 bytes", "must be chat").

Values are read as they travel: python-telegram-bot posts a form whose strings are sent as
they are and everything else as JSON, and Telegram reads them so."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPEC_FILE = "telegram_bot_api_spec.json"
UPDATES_FILE = "ptb_v22.8_updates.json"
_CHARACTERS = re.compile(r"(\d+)-(\d+) characters")
_BYTES = re.compile(r"(\d+)-(\d+) bytes")
_MUST_BE = re.compile(r"(?:must be|always) “?\"?([a-z_]+)")


def reference_data(name: str) -> Path | None:
    """A file of the reference data beside the project (VALET_REFERENCE_DATA, or
    ../shared/data), if it is there."""
    for base in (os.environ.get("VALET_REFERENCE_DATA"), ROOT.parent / "shared" / "data"):
        if base and (Path(base) / name).is_file():
            return Path(base) / name
    return None


@cache
def spec() -> dict[str, Any] | None:
    path = reference_data(SPEC_FILE)
    return json.loads(path.read_text()) if path is not None else None


def problems_of(method: str, params: dict[str, str], parsed: set[str] = frozenset()
                ) -> list[str]:
    """What is wrong with one request (`params` as sent: strings, or JSON for the rest).
    `parsed`: parameters whose length counts after entity parsing (text with a parse_mode),
    which the fake checks itself."""
    api = spec()
    if api is None:
        return []
    known = api["methods"].get(method)
    if known is None:
        return [f"{method}: no such method in Bot API {api.get('version')}"]
    fields = {f["name"]: f for f in known.get("fields") or []}
    found = [f"{method}: missing {name}" for name, f in fields.items()
             if f["required"] and name not in params]
    for name, raw in params.items():
        field = fields.get(name)
        if field is None:
            found.append(f"{method}: {name} is no parameter of {method}")
            continue
        value = _decoded(raw, field["types"])
        found += _check(f"{method}.{name}", value, field, api, counted=name not in parsed)
    return found


def _decoded(raw: Any, types: list[str]) -> Any:
    """A form value as Telegram reads it: the text as sent for a String, else JSON."""
    if not isinstance(raw, str):
        return raw  # (a JSON body: typed already)
    try:
        value = json.loads(raw)
    except ValueError:
        return raw  # plain text: a String, or the wrong type (reported)
    if isinstance(value, str) or types == ["String"]:
        return raw
    return value


def _check(where: str, value: Any, field: dict[str, Any], api: dict[str, Any], *,
           counted: bool = True) -> list[str]:
    types: list[str] = field["types"]
    failures = []
    for kind in types:
        found = _of_type(where, value, kind, api)
        if not found:
            return _limits(where, value, field.get("description", ""), counted)
        failures.append(found)
    return [min(failures, key=len)[0]] if failures else []


def _of_type(where: str, value: Any, kind: str, api: dict[str, Any]) -> list[str]:
    if kind.startswith("Array of "):
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not an array"]
        item = kind.removeprefix("Array of ")
        return [p for n, v in enumerate(value) for p in _of_type(f"{where}[{n}]", v, item, api)]
    simple = {"String": str, "Integer": int, "Float": (int, float), "Boolean": bool}
    if kind in simple:
        ok = isinstance(value, simple[kind]) and not (kind != "Boolean" and
                                                      isinstance(value, bool))
        return [] if ok else [f"{where}: {value!r} is not {kind}"]
    if kind == "InputFile":
        return []
    known = api["types"].get(kind)
    if known is None:
        return [f"{where}: the spec knows no type {kind}"]
    if known.get("subtypes"):
        tries = [_of_type(where, value, sub, api) for sub in known["subtypes"]]
        return [] if any(not t for t in tries) else min(tries, key=len)
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not a {kind} object"]
    fields = {f["name"]: f for f in known.get("fields") or []}
    found = [f"{where}: {kind} lacks {name}" for name, f in fields.items()
             if f["required"] and name not in value]
    for name, item in value.items():
        if name not in fields:
            found.append(f"{where}: {kind} has no field {name}")
        else:
            found += _check(f"{where}.{name}", item, fields[name], api)
    return found


def _limits(where: str, value: Any, description: str, counted: bool) -> list[str]:
    if not isinstance(value, str):
        return []
    chars = _CHARACTERS.search(description)
    if chars and counted and not int(chars.group(1)) <= len(value) <= int(chars.group(2)):
        return [f"{where}: {len(value)} characters, not {chars.group(0)}"]
    size = _BYTES.search(description)
    if size and not int(size.group(1)) <= len(value.encode()) <= int(size.group(2)):
        return [f"{where}: {len(value.encode())} bytes, not {size.group(0)}"]
    must = _MUST_BE.search(description)
    if must and description.startswith(("Scope type", "Type of the")) and value != must.group(1):
        return [f"{where}: {value!r}, not {must.group(1)!r}"]
    return []
