"""Time from process start to the first answered message (`valet chat --pipe`, fresh SQLite
file, the embedded defaults: no Telegram, SMS, MCP, calendar or mail configured).

Beside it, the same run's floor: a Python process that only imports the `openai` client (which
every chat needs for its first answer) and exits. Goal: at most the floor + 250 ms (medians of
the same run, runs interleaved). Wall times move with the machine's load; the CPU the process
used (user + system, until it exits) moves less.

Both run with compiled bytecode, as an installed Valet has it (pip compiles it; a checkout
run with PYTHONDONTWRITEBYTECODE would compile every module on every start): bytecode goes to
a directory of the run (PYTHONPYCACHEPREFIX), written by one start that is not measured.
`valet` pauses the cyclic garbage collector while it starts (bot.plumbing.startup); a second
floor, the same import with the collector paused, shows what that part alone is worth.

Then where the time above the floor goes: the modules the first answer imports that `import
openai` does not, slowest first (`python -X importtime`, each module's own time).
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.size import sized
from tests.fakes.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]
GOAL_ABOVE_FLOOR_MS = 250
SLOWEST = 15  # imports listed


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _first_answer(env: dict[str, str], *flags: str) -> tuple[float, float, bytes]:
    """(wall, CPU, stderr) of `valet chat --pipe` until its first answer."""
    cpu = _children_cpu()
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *flags, "-m", "bot", "chat", "--pipe", env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    assert proc.stdin and proc.stdout
    proc.stdin.write(b"hi\n")
    await proc.stdin.drain()
    answer = await proc.stdout.readline()
    wall = time.perf_counter() - t0
    proc.stdin.close()
    _, err = await proc.communicate()
    if not answer:
        raise RuntimeError(f"valet chat --pipe gave no answer: {err.decode()[-2000:]}")
    return wall, _children_cpu() - cpu, err


FLOOR = "import openai"
PAUSED_FLOOR = "import gc; gc.disable(); import openai"


async def _floor(env: dict[str, str], *flags: str, code: str = FLOOR
                 ) -> tuple[float, float, bytes]:
    cpu = _children_cpu()
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(sys.executable, *flags, "-c", code,
                                                env=env, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    return time.perf_counter() - t0, _children_cpu() - cpu, err


def _import_times(stderr: bytes) -> dict[str, int]:
    """module -> its own import time (µs), from `python -X importtime`."""
    found = {}
    for raw in stderr.decode(errors="replace").splitlines():
        if raw.startswith("import time:") and "|" in raw:
            own, _, name = raw[len("import time:"):].split("|", 2)
            if own.strip().isdigit():
                found[name.strip()] = int(own)
    return found


async def _slowest_imports(env: dict[str, str]) -> list[str]:
    *_, valet = await _first_answer(env, "-X", "importtime")
    *_, floor = await _floor(env, "-X", "importtime")
    above = _import_times(valet)
    for name in _import_times(floor):
        above.pop(name, None)
    total = sum(above.values()) / 1000
    lines = [f"  imported above the floor: {len(above)} modules, {total:.0f} ms of their own "
             f"import time; the {SLOWEST} slowest:"]
    for name, micros in sorted(above.items(), key=lambda kv: -kv[1])[:SLOWEST]:
        lines.append(f"    {micros / 1000:7.1f} ms  {name}")
    return lines


async def run(repeats: int | None = None) -> list[str]:
    repeats = repeats or sized(7, 1)
    valet: list[tuple[float, float]] = []
    floor: list[tuple[float, float]] = []
    paused: list[tuple[float, float]] = []
    async with FakeOpenAI() as fake:
        fake.responder = lambda req: Reply(content="hello")
        with tempfile.TemporaryDirectory() as bytecode:
            base = {**{k: v for k, v in os.environ.items()
                       if not k.startswith("VALET_") and k != "PYTHONDONTWRITEBYTECODE"},
                    "VALET_LLM_BASE_URL": fake.base_url, "VALET_LLM_MODEL": "m",
                    "VALET_CONFIG": os.devnull, "PYTHONPATH": str(ROOT),
                    "PYTHONPYCACHEPREFIX": bytecode}
            for n in range(repeats + 1):  # the first writes the bytecode: not measured
                with tempfile.TemporaryDirectory() as tmp:
                    env = {**base, "VALET_DATABASE_URL": f"sqlite:///{tmp}/v.db"}
                    answer = (await _first_answer(env))[:2]  # interleaved: the same load
                    if n:
                        valet.append(answer)
                        floor.append((await _floor(env))[:2])
                        paused.append((await _floor(env, code=PAUSED_FLOOR))[:2])
            with tempfile.TemporaryDirectory() as tmp:
                slowest = await _slowest_imports({**base,
                                                  "VALET_DATABASE_URL": f"sqlite:///{tmp}/v.db"})
    above = statistics.median(w for w, _ in valet) - statistics.median(w for w, _ in floor)
    verdict = "met" if above * 1000 <= GOAL_ABOVE_FLOOR_MS else "NOT MET"
    return ["Start-up: process start to first answered message (fresh SQLite file)",
            _line("valet chat --pipe: first answer", valet),
            _line("floor: python -c 'import openai'", floor),
            _line("  the same, the collector paused", paused),
            f"  above the floor (median - median): {above * 1000:.0f} ms (goal <= "
            f"{GOAL_ABOVE_FLOOR_MS} ms: {verdict})", *slowest]


def _line(label: str, runs: list[tuple[float, float]]) -> str:
    walls = [w * 1000 for w, _ in runs]
    cpus = [c * 1000 for _, c in runs]
    return (f"  {label:<36} median {statistics.median(walls):5.0f} ms   min {min(walls):5.0f} ms"
            f"   CPU median {statistics.median(cpus):5.0f} ms   n={len(runs)}")
