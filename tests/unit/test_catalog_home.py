"""No line of persona/ is written outside the catalog: every sentence Valet writes itself is
a line of `Lines` (so persona/catalog/ has it in every language, tests/unit/test_catalog.py),
agents' questions included. tests/unit/test_lines_home.py finds sentences handed to whatever
sends them; this finds the rest:

- an agent's question (`InputField(prompt=...)`) names a line by its key, never a sentence;
- `say("key")` (persona.catalog) names a line that exists;
- what an agent asks or shows on its card (`question`, `question_for`, `approval_summary`)
  returns no sentence of its own;
- no module keeps a sentence for a person in a constant and hands it to a notice (as the
  console's People page once did with its own "You're in!");
- every group of lines in persona/ is part of `Lines`, so none escapes the catalog."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

from persona.line_group import LineGroup
from persona.lines import Lines
from tests.unit.test_lines_home import PACKAGES, ROOT, callee, worded

KEYS = set(Lines.model_fields)
ASKERS = ("question", "question_for", "approval_summary")
NOTICES = ("notify_user", "notify_owner", "Notification")


def trees(root: Path, packages: tuple[str, ...]) -> Iterator[tuple[Path, ast.Module]]:
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root), ast.parse(path.read_text(encoding="utf-8"))


def says_lines(tree: ast.Module) -> bool:
    """The module's `say` is the catalog's (the command line has a `say` of its own)."""
    return any(isinstance(node, ast.ImportFrom) and node.module == "persona.catalog"
               and any(alias.name == "say" for alias in node.names) for node in tree.body)


def _constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
        else None


def misplaced(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    found = []
    for where, tree in trees(root, packages):
        sentences = {target.id for node in tree.body if isinstance(node, ast.Assign)
                     for target in node.targets if isinstance(target, ast.Name)
                     and (text := _constant(node.value)) and len(text.split()) > 2}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and callee(node) == "InputField":
                for keyword in node.keywords:
                    prompt = _constant(keyword.value) if keyword.arg == "prompt" else None
                    if prompt is not None and prompt not in KEYS:
                        found.append(f"{where}:{node.lineno}: prompt {prompt!r} is not a line")
            if isinstance(node, ast.Call) and callee(node) == "say" and node.args and \
                    says_lines(tree):
                key = _constant(node.args[0])
                if key is not None and key not in KEYS:
                    found.append(f"{where}:{node.lineno}: say({key!r}): no such line")
            if isinstance(node, ast.Call) and callee(node) in NOTICES:
                for argument in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(argument, ast.Name) and argument.id in sentences:
                        found.append(f"{where}:{node.lineno}: {callee(node)} says the "
                                     f"constant {argument.id}")
            if isinstance(node, ast.FunctionDef) and node.name in ASKERS:
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Return) and inner.value is not None:
                        found += [f"{where}:{inner.lineno}: {node.name} returns {text!r}"
                                  for text in worded(inner.value)
                                  if len(text.split()) > 1]
    return found


def test_no_line_of_persona_is_written_outside_the_catalog():
    assert misplaced() == []


def test_every_group_of_lines_is_part_of_lines():
    groups = set()
    for path in sorted((ROOT / "persona").glob("lines*.py")):
        module = importlib.import_module(f"persona.{path.stem}")
        groups |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                   if issubclass(cls, LineGroup) and cls is not LineGroup
                   and cls.__module__ == module.__name__}
    assert groups and all(issubclass(Lines, group) for group in groups), \
        sorted(g.__name__ for g in groups if not issubclass(Lines, g))


def test_the_scan_sees_a_question_written_in_place(tmp_path):
    source = ('from agents.base import InputField\nfrom persona.catalog import say\n'
              'x = InputField(str, "what", prompt="What should I do?")\n'
              'WELCOME = "Welcome in, friend!"\n'
              'async def f(o, u):\n    await o.notify_user(u, WELCOME, dedupe_key="k")\n'
              'def question(self):\n    return "What is it now?"\n'
              'def g():\n    return say("no_such_line")\n')
    package = tmp_path / "agents"
    package.mkdir()
    (package / "bad.py").write_text(source, encoding="utf-8")
    found = "\n".join(misplaced(tmp_path, ("agents",)))
    assert "prompt 'What should I do?'" in found
    assert "constant WELCOME" in found
    assert "question returns 'What is it now?'" in found
    assert "say('no_such_line')" in found
