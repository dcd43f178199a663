"""Changing valet.yaml the way a person would: a round trip (ruamel.yaml) that keeps the
operator's comments, key order and quoting, touching only the keys it sets. Used by
`valet onboard` (it writes the file, and edits it when run again) and by the owner claim
(`owner.telegram_ids` / `owner.phone_numbers`).

The file is replaced atomically (a crash leaves the old file or the new one) with the mode it
had. Secrets never go here: they belong in the env file (bot.config.env_file)."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

# A value of None removes the key.
Changes = Mapping[tuple[str, ...], Any]


class YamlEditError(Exception):
    """The file could not be read or written; one line saying why."""


def _yaml() -> YAML:
    yaml = YAML()  # round trip: comments and order survive
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 100
    return yaml


def read_tree(path: Path) -> CommentedMap:
    if not path.exists():
        return CommentedMap()
    try:
        data = _yaml().load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError) as err:
        raise YamlEditError(f"{path}: cannot read: {err}") from err
    if data is None:
        return CommentedMap()
    if not isinstance(data, CommentedMap):
        raise YamlEditError(f"{path}:1: the top level must be a mapping of settings")
    return data


def edit_config(path: Path, changes: Changes) -> bool:
    """Set each key path to its value (None: remove it); True when the file changed."""
    tree = read_tree(path)
    before = _dump(tree)
    for keys, value in changes.items():
        if value is None:
            _remove(tree, keys)
        else:
            _set(tree, keys, value)
    after = _dump(tree)
    if after == before and path.exists():
        return False
    _write(path, after)
    return True


def add_to_list(path: Path, keys: tuple[str, ...], value: str) -> bool:
    """Append `value` to the list at `keys` unless it is there; True when the file changed."""
    tree = read_tree(path)
    current = _get(tree, keys)
    items = list(current) if isinstance(current, list) else []
    if value in [str(v) for v in items]:
        return False
    if isinstance(current, CommentedSeq):
        current.append(value)
    else:
        seq = CommentedSeq([*items, value])
        seq.fa.set_flow_style()
        _set(tree, keys, seq)
    _write(path, _dump(tree))
    return True


def _get(tree: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _set(tree: CommentedMap, keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        inner = tree.get(key)
        if not isinstance(inner, dict):
            inner = CommentedMap()
            tree[key] = inner
        tree = inner
    if isinstance(value, list) and not isinstance(value, CommentedSeq):
        seq = CommentedSeq(value)
        seq.fa.set_flow_style()
        value = seq
    tree[keys[-1]] = value


def _remove(tree: CommentedMap, keys: tuple[str, ...]) -> None:
    parent = _get(tree, keys[:-1]) if len(keys) > 1 else tree
    if isinstance(parent, dict):
        parent.pop(keys[-1], None)
        if not parent and len(keys) > 1:
            _remove(tree, keys[:-1])  # no empty section left behind


def _dump(tree: CommentedMap) -> str:
    out = io.StringIO()
    if tree:
        _yaml().dump(tree, out)
    return out.getvalue()


def _write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(partial, mode)
        os.replace(partial, path)
    except OSError as err:
        raise YamlEditError(f"{path}: cannot write: {err.strerror or err}") from err
