"""The README a newcomer reads: every command it shows in a code block is run by a test (RUN_BY
names which, or CI), every `valet` command in it parses, and every relative link in README.md
and docs/*.md reaches a file and, with an #anchor, a heading in it (GitHub's anchors)."""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from bot.cli.main import parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

# A README command (its first two words) -> the word its process is started with (quoted in the
# test's source: the `valet` subcommand, or what the Makefile recipe runs) and the tests that
# run it. `make run`'s recipe is `valet chat`; `make bench`'s is `python -m tests.bench`.
RUN_BY: dict[str, tuple[str, list[str]]] = {
    "make run": ("chat", [
        "tests/e2e/test_console_tty.py::test_arrow_keys_edit_the_line_and_up_recalls_it"]),
    "make bench": ("tests.bench", [
        "tests/e2e/test_bench_command.py::test_make_bench_runs_a_benchmark_and_prints_its_numbers"]),
    "valet onboard": ("onboard", [
        "tests/e2e/test_onboard.py::"
        "test_in_a_terminal_it_asks_each_step_and_asks_again_after_a_refusal"]),
    "valet serve": ("serve", [
        "tests/e2e/test_owner_claim.py::test_serve_prints_the_claim_code_and_records_the_owner",
        "tests/e2e/test_serve.py::test_serve_answers_telegram_reports_health_and_stops_on_sigterm",
    ]),
}
# Run by CI rather than by a test: `.ci/run` is `make lint test` on a clean machine.
RUN_BY_CI = {"make lint", "make test"}
# What each make target's recipe runs (so RUN_BY's word is the recipe's).
RECIPES = {"run": "valet chat", "bench": "-m tests.bench", "test": "-m pytest",
           "lint": "ruff check"}

COMMAND_START = ("make ", "valet ", ".venv/bin/valet ")


def fenced_blocks(text: str) -> list[list[str]]:
    """The lines of each fenced code block (a fence may be indented, as in a list)."""
    blocks: list[list[str]] = []
    inside: list[str] | None = None
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if inside is None:
                inside = []
            else:
                blocks.append(inside)
                inside = None
        elif inside is not None:
            inside.append(line)
    return blocks


def readme_commands() -> list[str]:
    """Every command line in the README's code blocks, without its comment; `.venv/bin/valet`
    is `valet`."""
    found = []
    for block in fenced_blocks(README.read_text()):
        for line in block:
            line = line.strip()
            if not line.startswith(COMMAND_START):
                continue  # comments, `export` lines, example output
            line = line.split(" #", 1)[0].strip()
            found.append(line.removeprefix(".venv/bin/"))
    return found


def key(command: str) -> str:
    words = [w for w in shlex.split(command) if not w.startswith("-")]
    return " ".join(words[:2])


def test_the_readme_shows_commands():
    assert {key(c) for c in readme_commands()} >= {"make run", "make test", "valet onboard",
                                                     "valet serve"}


@pytest.mark.parametrize("command", readme_commands())
def test_every_readme_command_is_run_by_a_test(command):
    assert key(command) in RUN_BY or key(command) in RUN_BY_CI, (
        f"README command `{command}` is run by no test: run it in one and name the test in "
        "tests/unit/test_readme.py RUN_BY")


@pytest.mark.parametrize("command", [c for c in readme_commands() if c.startswith("valet ")])
def test_every_valet_command_in_the_readme_parses(command):
    try:
        parser().parse_args(shlex.split(command)[1:])
    except (SystemExit, argparse.ArgumentError) as stop:
        pytest.fail(f"`{command}` does not parse: {stop}")


@cache
def makefile_recipes() -> dict[str, str]:
    recipes: dict[str, str] = {}
    target = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("\t") and target:
            recipes[target] += line.strip() + "\n"
        elif re.match(r"^[a-z]+:", line):
            target = line.split(":", 1)[0]
            recipes[target] = ""
        else:
            target = None
    return recipes


@pytest.mark.parametrize("target", sorted(RECIPES))
def test_each_make_target_runs_what_the_table_says(target):
    assert RECIPES[target] in makefile_recipes()[target]


def test_what_ci_runs_is_make_lint_test():
    assert "make lint test" in (ROOT / ".ci" / "run").read_text().splitlines()


def module_functions(path: Path) -> dict[str, str]:
    source = path.read_text()
    return {node.name: ast.get_source_segment(source, node) or ""
            for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("command", sorted(RUN_BY))
def test_the_named_tests_exist_and_start_the_command(command):
    word, tests = RUN_BY[command]
    for test in tests:
        file, name = test.split("::")
        functions = module_functions(ROOT / file)
        assert name in functions, f"{test} does not exist"
        # The test itself, or a helper of its module it calls, starts the process with `word`.
        source = functions[name] + "".join(
            body for helper, body in functions.items() if re.search(rf"\b{helper}\(",
                                                                      functions[name]))
        assert f'"{word}"' in source, f"{test} does not run `{word}`"


# --- links ------------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def outside_code(text: str) -> str:
    """The text without its fenced code blocks (a link or heading there is not one)."""
    kept, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation but `-` and `_` dropped, spaces to `-`,
    a repeated heading numbered."""
    seen: dict[str, int] = {}
    for line in outside_code(page.read_text()).splitlines():
        heading = re.match(r"^#{1,6} +(.*?)\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(outside_code(page.read_text()))
            if not re.match(r"^[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_a_heading(page):
    broken = []
    for link in relative_links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and (target.suffix != ".md" or anchor not in anchors(target)):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    assert broken == []


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / link.partition("#")[0]).resolve()
              for link in relative_links(README)}
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []
