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


def test_agents_may_use_triggers_but_never_the_reverse() -> None:
    """The reminder agent and the task tools schedule through the trigger side's service;
    the trigger side runs whatever tools it is given and names no agent."""
    assert violations(modules("triggers"), ("agents", "channels")) == []
    assert violations(modules("agents"), ("channels",)) == []


def test_channels_import_no_trigger_or_agent() -> None:
    assert violations(modules("channels"), ("triggers", "agents")) == []


# The layers, bottom first (docs/architecture.md, "Layers"). A unit is a folder of bot/ (or a
# module loose in it) or one of the other packages; a unit imports only units below it, never
# one beside it or above it. Every unit is placed: a new folder must say where it stands.
LAYERS: list[tuple[str, ...]] = [
    ("bot.contracts",),  # the types every layer shares; nothing of Valet
    ("bot.text",),  # text where it enters and leaves
    ("bot.plumbing",),  # clock, backoff, offload, logs, metrics, Redis...
    ("bot.config",),  # settings, and the settings types others are built from
    ("persona",),  # the persona and every line a person reads
    ("bot.db",),  # the database port and the core's migrations
    ("bot.llm",),  # the LLM port
    ("bot.budget", "bot.credentials", "bot.channel"),  # what a person spends a day; secrets
    # at rest; the channel port
    ("bot.tools",),  # @tool and the registry, one call to its outcome, the capabilities and
    # their router, the tools a conversation was offered
    ("bot.people",),  # who Valet serves and who may talk to it
    ("bot.meter",),  # the one gate for money: messages and LLM calls (bot/meter)
    ("bot.approvals",),
    ("bot.loop",),  # the ReAct loop
    ("bot.tasks",),  # tasks waiting for an answer (a step of the turn)
    ("bot.memory",),
    ("bot.turn",),  # the turn: its steps, the orchestrator, compose
    ("bot.work",),  # between processes: streams, signals, relay
    ("bot.gateway",),  # inbound and outbound
    ("bot.setup",),  # what doctor and onboard hand a channel's own checks and step
    ("channels",),
    ("triggers",),
    ("agents",),
    ("bot.app",),  # the composition root
    ("bot.cli",),
    ("bot.__main__",),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
PACKAGES = ("bot", "agents", "channels", "triggers", "persona")


def unit_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bot" and len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every module of the five packages and the modules it imports (TYPE_CHECKING and late
    imports included), each import resolved to the longest module name that exists."""
    paths = [p for package in PACKAGES for p in modules(package)]
    known = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        name = module_name(path)
        graph[name] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in found:
                parts = target.split(".")
                for end in range(len(parts), 0, -1):
                    candidate = ".".join(parts[:end])
                    if candidate in known:
                        if candidate != name and candidate != "bot":
                            graph[name].add(candidate)
                        break
    return graph


def test_every_unit_has_its_place_in_the_layers() -> None:
    units = {unit_of(m) for m in import_graph()} - {"bot"}
    assert sorted(units - set(RANK)) == []
    assert sorted(set(RANK) - units) == []  # no layer names a unit that is gone


def test_no_import_runs_sideways_or_back_up() -> None:
    wrong = []
    for module, targets in import_graph().items():
        here = unit_of(module)
        for target in sorted(targets):
            there = unit_of(target)
            if there != here and RANK.get(there, -1) >= RANK.get(here, -1):
                wrong.append(f"{module} ({here}) imports {target} ({there})")
    assert wrong == []


def test_no_import_cycle_between_modules() -> None:
    """TYPE_CHECKING imports count: a cycle hidden from the interpreter is still one."""
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []


def test_contracts_import_nothing_of_valet_but_contracts() -> None:
    graph = import_graph()
    outside = [f"{m} imports {t}" for m, targets in graph.items() if m.startswith("bot.contracts")
               for t in sorted(targets) if not t.startswith("bot.contracts")]
    assert outside == []
