"""The arrows between the packages point one way (docs/architecture.md, section 1).

Every import is read, also the late ones inside functions and those under TYPE_CHECKING: a
late import is still a dependency, only a hidden one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The composition root and the command line know every part; nothing else under bot/ may.
EDGE = ("bot/app/", "bot/cli/", "bot/__main__.py")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules(package: str, *, excluding: tuple[str, ...] = ()) -> list[Path]:
    paths = sorted((ROOT / package).rglob("*.py"))
    return [p for p in paths
            if not any(p.relative_to(ROOT).as_posix().startswith(e) for e in excluding)]


def violations(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    found = []
    for path in paths:
        for name in sorted(imports_of(path)):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


def test_the_core_imports_no_channel_trigger_agent_or_composition_root() -> None:
    core = modules("bot", excluding=EDGE)
    assert len(core) > 40  # the walk found the core
    assert violations(core, ("channels", "triggers", "agents", "bot.app", "bot.cli")) == []


@pytest.mark.parametrize("package", ["channels", "triggers", "agents", "persona"])
def test_no_part_reaches_for_the_composition_root(package: str) -> None:
    assert violations(modules(package), ("bot.app", "bot.cli")) == []


def test_agents_and_triggers_do_not_import_each_other() -> None:
    assert violations(modules("agents"), ("triggers", "channels")) == []
    assert violations(modules("triggers"), ("agents", "channels")) == []


def test_channels_import_no_trigger_or_agent() -> None:
    assert violations(modules("channels"), ("triggers", "agents")) == []
