"""The web console is an edge: it acts through the parts' public ways and runs no SQL of its
own (every query it needs is a method of the store that owns the table), and the core never
imports it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.unit.test_layers import imports_of, modules

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "bot" / "app" / "console"
SQL = re.compile(r"\b(select\s.+\sfrom|insert\s+into|update\s+\w+\s+set|delete\s+from)\b",
                 re.I | re.S)


def test_the_console_package_has_no_sql() -> None:
    found = []
    paths = sorted(CONSOLE.rglob("*.py"))
    assert len(paths) >= 10
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and SQL.search(node.value):
                found.append(f"{path.relative_to(ROOT)}: {node.value[:60]}")
    assert found == []


def test_the_detector_sees_sql() -> None:
    assert SQL.search("SELECT id FROM outbox WHERE status = 'dead'")
    assert SQL.search("UPDATE outbox SET status = 'pending'")
    assert not SQL.search("Select a month; update the page")


def test_nothing_outside_the_edge_imports_the_console() -> None:
    users = [p for package in ("bot", "channels", "triggers", "agents", "persona")
             for p in modules(package, excluding=("bot/app/", "bot/cli/"))
             if any(name.startswith("bot.app.console") for name in imports_of(p))]
    assert users == []
