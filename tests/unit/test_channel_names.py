"""A channel is described once (docs/architecture.md, section 6): by its spec
(channels/<name>/spec.py, one line of channels/registry.py). Outside `channels/` what deals
with channels goes through the registry (bot/app, bot/cli) or is handed the channels' traits
(the core: bot.contracts.channels), and names none of them; a few modules may, each for the
reason listed below.

Naming a channel is what code does, not what it says: a string that is a channel's name or
starts with it ("sms", "telegram_ids", "sms.from_number"), an identifier, an attribute or a
keyword argument spelled as one, an import of a channel's package. Docstrings and comments
are prose and do not count."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from channels import registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "agents", "triggers", "persona")  # everything outside channels/


def served() -> tuple[str, ...]:
    """The channels `valet serve` runs, as the registry lists them now (the terminal is the
    console's own: `valet chat`)."""
    return tuple(spec.name for spec in registry.BUILT_IN if spec.build is not None)


CHANNELS = served()

# The modules outside channels/ that may name a channel, and why. At most four.
MAY_NAME = {
    "bot/config/settings.py": "the settings: valet.yaml's sections (telegram:, sms:) and what "
                              "is worked out from them (the Telegram webhook's address, where "
                              "SMS may go)",
    "bot/config/loading.py": "loading the settings: the sections' environment variables "
                             "(VALET_TELEGRAM_TOKEN...) and the checks made when they load "
                             "(the owner's numbers in E.164)",
    "agents/contacts/store.py": "the address book keeps a contact's Telegram handle, as it "
                                "keeps their email (its `telegram` column)",
    "agents/contacts/contacts.py": "the contact tools' `telegram` argument, which the model "
                                   "fills as it fills `email` (their schema)",
}


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                found.add(id(body[0].value))
    return found


def namings(source: str, names: tuple[str, ...] = CHANNELS) -> list[tuple[int, str]]:
    """Where the code names one of `names`: (line, what)."""
    tree = ast.parse(source)
    prose = docstrings(tree)
    starts = re.compile(rf"^({'|'.join(names)})([.:_]|$)", re.IGNORECASE)
    package = re.compile(rf"^channels\.({'|'.join(names)})(\.|$)")
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in prose and starts.match(node.value):
            found.append((node.lineno, repr(node.value)[:40]))
        elif isinstance(node, ast.Attribute) and node.attr.lower() in names:
            found.append((node.lineno, "." + node.attr))
        elif isinstance(node, ast.Name) and node.id.lower() in names:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.keyword) and node.arg and node.arg.lower() in names:
            found.append((node.lineno, node.arg + "="))
        elif isinstance(node, ast.ImportFrom) and node.module and package.match(node.module):
            found.append((node.lineno, f"from {node.module}"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names
                      if package.match(a.name)]
    return found


def modules_naming_a_channel(names: tuple[str, ...] = CHANNELS
                             ) -> dict[str, list[tuple[int, str]]]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            hits = namings(path.read_text(encoding="utf-8"), names)
            if hits:
                found[path.relative_to(ROOT).as_posix()] = sorted(hits)[:6]
    return found


def test_the_reading_finds_code_that_names_a_channel_and_skips_prose() -> None:
    source = '''"""Telegram and sms in a docstring: prose."""
from channels.sms.store import SmsStore
import channels.telegram.service
x = "sms"
y = settings.telegram.mode
z = "sms.from_number"
f(telegram="@ana")
sms = 1
w = "a phone number"  # sms, in a comment
'''
    assert [what for _, what in sorted(namings(source, ("telegram", "sms")))] == [
        "from channels.sms.store", "import channels.telegram.service", "'sms'", ".telegram",
        "'sms.from_number'", "telegram=", "sms"]


def test_only_the_listed_modules_outside_channels_name_a_channel(built_in) -> None:
    names = served()  # the reading knows every channel serve runs
    assert names == tuple(s.name for s in built_in if s.build is not None) and names
    assert len(MAY_NAME) <= 4
    found = modules_naming_a_channel(names)
    # Each listed module still needs it (else it comes off the list), and no other does.
    assert {m: hits for m, hits in found.items() if m not in MAY_NAME} == {}
    assert sorted(found) == sorted(MAY_NAME)
