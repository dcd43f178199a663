"""Time from process start to the first answered message (`valet chat --pipe`, fresh SQLite
file, the embedded defaults: no Telegram, SMS, MCP, calendar or mail configured).

Beside it, the same run's floor: a Python process that only imports the `openai` client (which
every chat needs for its first answer) and exits. Wall times move with the machine's load;
the CPU the process used (user + system, until it exits) moves less.
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

from tests.fakes.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _first_answer(env: dict[str, str]) -> tuple[float, float]:
    cpu = _children_cpu()
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--pipe", env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert proc.stdin and proc.stdout
    proc.stdin.write(b"hi\n")
    await proc.stdin.drain()
    await proc.stdout.readline()
    wall = time.perf_counter() - t0
    proc.stdin.close()
    await proc.wait()
    return wall, _children_cpu() - cpu


async def _floor(env: dict[str, str]) -> tuple[float, float]:
    cpu = _children_cpu()
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import openai", env=env)
    await proc.wait()
    return time.perf_counter() - t0, _children_cpu() - cpu


async def run(repeats: int = 5) -> list[str]:
    valet: list[tuple[float, float]] = []
    floor: list[tuple[float, float]] = []
    async with FakeOpenAI() as fake:
        fake.responder = lambda req: Reply(content="hello")
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                env = {**{k: v for k, v in os.environ.items() if not k.startswith("VALET_")},
                       "VALET_LLM_BASE_URL": fake.base_url, "VALET_LLM_MODEL": "m",
                       "VALET_DATABASE_URL": f"sqlite:///{tmp}/v.db",
                       "VALET_CONFIG": os.devnull, "PYTHONPATH": str(ROOT)}
                valet.append(await _first_answer(env))  # interleaved: the same load for both
                floor.append(await _floor(env))
    return ["Start-up: process start to first answered message (fresh SQLite file)",
            _line("valet chat --pipe: first answer", valet),
            _line("floor: python -c 'import openai'", floor)]


def _line(label: str, runs: list[tuple[float, float]]) -> str:
    walls = [w * 1000 for w, _ in runs]
    cpus = [c * 1000 for _, c in runs]
    return (f"  {label:<36} median {statistics.median(walls):5.0f} ms   min {min(walls):5.0f} ms"
            f"   CPU median {statistics.median(cpus):5.0f} ms   n={len(runs)}")
