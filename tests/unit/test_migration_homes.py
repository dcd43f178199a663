"""Each package's tables are created by that package's own migrations (bot.app.database names
them all): the core's migrations create no table only a channel, the trigger side or the
agents use, and a migration in parts keeps each part with the package that owns it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.app.database import MIGRATIONS
from bot.db.migrate import migration_files

ROOT = Path(__file__).resolve().parents[2]
CREATED = re.compile(r"CREATE (?:VIRTUAL )?TABLE (?:IF NOT EXISTS )?(\w+)", re.I)
HOMES = {"bot.db": ("bot",), "channels.sms": ("channels/sms",),
         "channels.whatsapp": ("channels/whatsapp",), "triggers": ("triggers",),
         "agents": ("agents",)}


def created_by(package: str) -> set[str]:
    folder = ROOT / package.replace(".", "/") / "migrations"
    return {name.lower() for path in folder.glob("*.sql")
            for name in CREATED.findall(path.read_text(encoding="utf-8"))}


def mentioned_in(folders: tuple[str, ...], table: str) -> bool:
    pattern = re.compile(rf"\b{table}\b")
    return any(pattern.search(path.read_text(encoding="utf-8"))
               for folder in folders for path in (ROOT / folder).rglob("*.py"))


def test_the_composition_root_names_every_package_with_migrations() -> None:
    found = {str(p.parent.parent.relative_to(ROOT)).replace("/", ".")
             for p in ROOT.glob("**/migrations/*.sql") if ".venv" not in p.parts}
    assert found == set(MIGRATIONS) == set(HOMES)
    assert MIGRATIONS[0] == "bot.db"  # the core's tables first: the others refer to them


@pytest.mark.parametrize("package", sorted(HOMES))
def test_a_package_creates_only_tables_its_own_code_uses(package: str) -> None:
    tables = created_by(package)
    assert tables
    strangers = sorted(t for t in tables if not mentioned_in(HOMES[package], t))
    assert strangers == []


def test_a_version_in_parts_is_one_migration_applied_core_first() -> None:
    files = migration_files(MIGRATIONS)
    versions = [v for v, _, _ in files]
    assert versions == sorted(set(versions))  # one entry a version
    parts = {v: sql for v, _, sql in files}
    # 0003: the core's waiting tasks, then the agents' plans, notes and reminders
    assert parts[3].index("CREATE TABLE agent_pool") < parts[3].index("CREATE TABLE notes")
    assert "CREATE TABLE sms_parts" in parts[8] and "ALTER TABLE outbox" in parts[8]
