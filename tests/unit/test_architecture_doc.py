"""docs/architecture.md's Layout lists every module, under its folder, in the order of the
layers tests/unit/test_layers.py enforces: the map cannot miss a module or keep a gone one."""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "agents", "channels", "triggers", "persona")


def listing() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    layout = text[text.index("## 1. Layout"):text.index("## 2.")]
    return layout[layout.index("```\n") + 4:layout.index("\n```", layout.index("```\n") + 4)] \
        .splitlines()


def listed() -> dict[str, set[str]]:
    """Folder (or loose module) -> the modules listed under it."""
    found: dict[str, set[str]] = {}
    folder = ""
    for line in listing():
        head = re.match(r"^(\S+)\s", line + " ")
        if head:
            folder = head.group(1)
            found.setdefault(folder, set())
            continue
        entry = re.match(r"^  (\S+\.py)\s", line + " ")
        if entry:
            found[folder].add(entry.group(1))
    return found


def test_every_module_is_on_the_map_under_its_folder() -> None:
    found = listed()
    missing = []
    for units in LAYERS:
        for unit in units:
            base = ROOT / unit.replace(".", "/")
            if base.with_suffix(".py").exists():
                if f"{unit.replace('.', '/')}.py" not in found:
                    missing.append(f"{unit.replace('.', '/')}.py")
                continue
            modules = {str(p.relative_to(base)) for p in base.rglob("*.py")
                       if p.name != "__init__.py"}
            missing += sorted(f"{unit}: {m}" for m in modules - found.get(
                f"{unit.replace('.', '/')}/", set()))
    assert missing == []


def test_the_map_names_no_module_that_is_gone() -> None:
    gone = [f"{folder}{module}" for folder, modules in listed().items() if folder.endswith("/")
            for module in modules if not (ROOT / folder / module).exists()]
    assert gone == []


def test_the_map_follows_the_layers() -> None:
    heads = [f for f in listed() if f.rstrip("/").replace("/", ".").split(".")[0] in PACKAGES]
    order = [u.replace(".", "/") + ("" if (ROOT / (u.replace(".", "/") + ".py")).exists()
                                    else "/") for units in LAYERS for u in units]
    assert [h for h in heads if h in order] == [o for o in order if o in heads]
