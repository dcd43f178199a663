"""One channel contract, called, never probed (docs/architecture.md, section 6): every sender
is a `bot.channel.ChannelSender`, whose defaults do nothing for what a channel cannot do, and
what a channel can do is its spec's `ChannelTraits`, read by whoever needs it. So no module
asks a channel whether it has a method or an attribute: no `getattr`/`hasattr` on a sender or
a channel, no `isinstance` on a protocol standing for a part of the contract."""

from __future__ import annotations

import ast
from pathlib import Path

from bot.channel import ChannelSender

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "channels", "agents", "triggers", "persona", "tests/fakes")
# What a sender is asked: a probe names one of these (the base's own, and the names of what
# it replaced)...
CONTRACT = {name for name in vars(ChannelSender) if not name.startswith("_")} - {
    "send", "close", "name"} | {"traits", "features", "username"}
# ...or looks at something that is a channel, by its name.
CHANNELISH = ("sender", "channel", "served")
# The protocols the base replaced (a runtime-checkable one is a probe by isinstance).
GONE = {"Paced", "Priced", "MediaSource", "Channel", "ChannelFeatures", "Abilities"}


def probes(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    # A module's own `__getattr__` (a lazy re-export) looks in a module, not at a channel.
    skipped = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
               and f.name == "__getattr__" for n in ast.walk(f)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            subject = ast.unparse(node.args[0]).lower()
            attr = node.args[1]
            named = isinstance(attr, ast.Constant) and attr.value in CONTRACT
            if named or any(word in subject for word in CHANNELISH):
                found.append((node.lineno, ast.unparse(node)))
        elif node.func.id == "isinstance" and len(node.args) == 2:
            kinds = node.args[1]
            names = {n.id for n in ast.walk(kinds) if isinstance(n, ast.Name)}
            if names & GONE:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_reading_finds_a_probe() -> None:
    source = '''
show = getattr(self.outbound.sender(channel), "typing", None)
features = getattr(senders.get(channel), "features", None)
ok = hasattr(sender, "answer_button")
paced = isinstance(sender, Paced)
code = getattr(err, "code", None)
found = getattr(settings.owner, key, [])
'''
    assert [line for line, _ in probes(source)] == [2, 3, 4, 5]


def test_no_module_probes_a_channel() -> None:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            hits = probes(path.read_text(encoding="utf-8"))
            if hits:
                found[path.relative_to(ROOT).as_posix()] = hits
    assert found == {}


def test_the_replaced_records_and_protocols_are_gone() -> None:
    import bot.channel
    import bot.meter.gate
    import bot.turn.media
    import channels.spec

    left = {name for module in (bot.channel, bot.meter.gate, bot.turn.media, channels.spec)
            for name in GONE if name in vars(module)}
    assert left == set()
