"""Approvals own their table: only bot/approvals/ reads or writes `approvals`.

Every string in the source is read (SQL lives in string literals; implicit concatenation is
one literal to the parser), so a query on the table anywhere else fails here, also one inside
a function or an f-string.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "channels", "triggers", "agents", "persona")
OWNER = "bot/approvals/"

# A statement that names the table: FROM/JOIN/INTO/UPDATE/TABLE approvals (any case).
SQL_ON_APPROVALS = re.compile(r"\b(?:from|join|into|update|table)\s+approvals\b", re.I)


def sql_on_approvals(source: str) -> list[str]:
    """The string literals of `source` that are SQL on the approvals table."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and SQL_ON_APPROVALS.search(node.value):
            found.append(" ".join(node.value.split()))
    return found


def test_the_detector_sees_a_query_on_the_table_and_nothing_else() -> None:
    assert sql_on_approvals('rows = db.fetch("SELECT status, expires_at FROM approvals"\n'
                            '                " WHERE trigger_task_id = $1", task)') != []
    assert sql_on_approvals('db.execute(f"UPDATE approvals SET x = {y}")') != []
    assert sql_on_approvals('q = "SELECT 1 FROM approvals a JOIN trigger_tasks t ON 1"') != []
    assert sql_on_approvals('"SELECT * FROM pairing_requests"; "pending approvals"') == []


def test_no_module_outside_the_approvals_package_has_sql_on_the_approvals_table() -> None:
    checked = 0
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith(OWNER):
                continue
            checked += 1
            found += [f"{name}: {sql}"
                      for sql in sql_on_approvals(path.read_text(encoding="utf-8"))]
    assert checked > 100  # the walk found the code
    assert found == []


def test_the_approvals_package_itself_is_where_the_sql_is() -> None:
    owned = [p for p in sorted((ROOT / OWNER).glob("*.py"))
             if sql_on_approvals(p.read_text(encoding="utf-8"))]
    assert ROOT / OWNER / "store.py" in owned
