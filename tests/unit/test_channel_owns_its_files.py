"""The change's own measure ([whatsapp] item 6): a built-in channel is its package, one line of
channels/registry.py, and words in the docs. Nothing else in the project needs WhatsApp: no
module outside channels/whatsapp/ imports it or names it in its code (a name, a string, a key of
valet.yaml, a line), no data file (a catalog, pyproject.toml, a unit, the Makefile) mentions it.
A comment or docstring that names the channels a shared part serves is words, not a need.

deploy/.env.example counts as documentation: it is the operator's commented list of the
variables the docs name (tests/e2e/test_deploy.py holds the two together)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from channels.registry import BUILT_IN

ROOT = Path(__file__).resolve().parents[2]
CHANNEL = "whatsapp"
# Where a channel may be named: its package, its line in the registry, the documentation.
ALLOWED = (f"channels/{CHANNEL}/", "channels/registry.py", "docs/", "README.md",
           "deploy/.env.example")
# The project's own files (tests are the channel's tests, and the fakes stand in for Twilio);
# not the caches and environments tools leave beside them (.venv, .hypothesis...), but CI's.
SKIPPED_PARTS = {"__pycache__", "tests", "build", "dist"}
KEPT_HIDDEN = {".ci", ".github", ".gitignore"}


def project_files() -> list[Path]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        relative = path.relative_to(ROOT)
        if not path.is_file() or SKIPPED_PARTS & set(relative.parts) or any(
                part.endswith(".egg-info") or (part.startswith(".") and part not in KEPT_HIDDEN)
                for part in relative.parts):
            continue
        if relative.parts[0] in ("data", "valet.yaml", "valet.env"):
            continue  # a person's own files beside a checkout (make run's data/)
        found.append(path)
    return found


def docstring_lines(tree: ast.Module) -> set[int]:
    """The lines of the module's, classes' and functions' docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def code_naming(path: Path, word: str) -> list[str]:
    """Where a Python file's code (not its comments or docstrings) says `word`."""
    text = path.read_text(encoding="utf-8")
    words = docstring_lines(ast.parse(text))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
            continue
        if token.type == tokenize.STRING and token.start[0] in words:
            continue
        if word in token.string.lower():
            found.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string[:60]}")
    return found


def needs_of_the_channel(word: str) -> list[str]:
    found = []
    for path in project_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(ALLOWED):
            continue
        if path.suffix == ".py":
            found += code_naming(path, word)
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{relative}:{n}: {line.strip()[:60]}"
                  for n, line in enumerate(text.splitlines(), 1) if word in line.lower()]
    return found


def test_the_channel_is_built_in() -> None:
    assert CHANNEL in [spec.name for spec in BUILT_IN]  # the measure looks at a real channel


def test_nothing_outside_its_package_the_registry_and_the_docs_needs_whatsapp() -> None:
    assert needs_of_the_channel(CHANNEL) == []


def test_the_measure_sees_a_need() -> None:
    """The walk reads code and data: the registry itself names the channel."""
    assert code_naming(ROOT / "channels" / "registry.py", CHANNEL)
    assert any("whatsapp" in line for line in
               (ROOT / "docs" / "whatsapp.md").read_text(encoding="utf-8").lower().splitlines())
