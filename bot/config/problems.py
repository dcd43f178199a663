"""Configuration mistakes in plain words: each one as `where: key: what is wrong`, with the
nearest known key for a typo. Shared by valet.yaml (bot.config) and persona files."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pydantic
import yaml
from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Problem:
    where: str  # "path/valet.yaml:12", or "environment VALET_LOG_LEVEL"
    key: str  # dotted: "loop.max_turns"
    text: str  # what is wrong, for the person who fixes it

    def __str__(self) -> str:
        return f"{self.where}: {self.key}: {self.text}"


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """' (did you mean web_fetch?)', or the known names when none is close."""
    names = sorted(set(known))
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]}?"
    return f"; known: {', '.join(names)}" if names else ""


def shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def plain_words(error: ErrorDetails, model: type[pydantic.BaseModel]) -> str:
    """One pydantic error as a sentence a person fixing a YAML file understands."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    loc = tuple(str(p) for p in error["loc"])
    if kind == "extra_forbidden":
        return "unknown setting" + did_you_mean(loc[-1], known_keys(model, loc[:-1]))
    if kind == "missing":
        return "is required"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"greater_than": "more than", "greater_than_equal": "at least",
                 "less_than": "less than", "less_than_equal": "at most"}[kind]
        bound = next(iter(ctx.values()), "?")
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"must be {words} {bound} (it is {shown(value)})"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"must be a whole number (it is {shown(value)})"
    if kind in ("float_parsing", "float_type"):
        return f"must be a number (it is {shown(value)})"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false (it is {shown(value)})"
    if kind in ("string_type",):
        return f"must be text (it is {shown(value)})"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of settings (it is {shown(value)})"
    if kind == "list_type":
        return f"must be a list (it is {shown(value)})"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '?')} (it is {shown(value)})"
    if kind == "value_error":
        return str(ctx.get("error") or error["msg"])
    return error["msg"]


def known_keys(model: type[pydantic.BaseModel], path: tuple[str, ...]) -> list[str]:
    """The field names of the model found by walking `path` down from `model`."""
    current: Any = model
    for key in path:
        current = _inner(current, key)
        if current is None:
            return []
    if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
        return list(current.model_fields)
    return []


def _inner(model: Any, key: str) -> Any:
    """The type one step below `model` for `key` (a field, or any key of a dict field)."""
    if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
        field = model.model_fields.get(key)
        return _unwrap(field.annotation) if field else None
    if typing.get_origin(model) is dict:
        return _unwrap(typing.get_args(model)[1])
    return None


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> X, so a walk goes through optional sections."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation


def validation_problems(err: pydantic.ValidationError, model: type[pydantic.BaseModel],
                        where: Callable[[tuple[str, ...]], str]) -> list[Problem]:
    """Every error of one validation, each named by its place and key."""
    problems = []
    for error in err.errors():
        loc = tuple(str(p) for p in error["loc"])
        problems.append(Problem(where(loc), ".".join(loc), plain_words(error, model)))
    return problems


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """Problems of the file by line, then those from the environment: how one fixes them."""
    def order(problem: Problem) -> tuple[int, int, str]:
        _, _, line = problem.where.rpartition(":")
        return (0, int(line), problem.key) if line.isdigit() else (1, 0, problem.key)
    return sorted(problems, key=order)


# libyaml's parser when PyYAML was built with it (ten times faster: start-up reads the
# registry, the persona and valet.yaml); the same constructors and resolver either way.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """A document's data and its node tree (for `yaml_line`); yaml.YAMLError as PyYAML's."""
    root = yaml.compose(text, Loader=_LOADER)
    return yaml.load(text, Loader=_LOADER), root  # a safe loader: no arbitrary objects


def yaml_line(root: yaml.Node | None, keys: tuple[str, ...]) -> str:
    """The 1-based line of a key path in a composed YAML document ('?' if unknown)."""
    node, line = root, "1" if root is not None else "?"
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == key:
                    line, node = str(k.start_mark.line + 1), v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
            line = str(node.start_mark.line + 1)
        else:
            return line
    return line


class ConfigError(Exception):
    """A configuration problem, worded for the person who has to fix it. Several problems of
    one file travel together: one line each."""

    def __init__(self, message: str | list[Problem] | list[str]) -> None:
        lines = [message] if isinstance(message, str) else [str(p) for p in message]
        super().__init__("\n".join(lines))
        self.lines = lines
