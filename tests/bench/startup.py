"""Time from process start to the first answered message (`valet chat --pipe`)."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]


async def run(repeats: int = 5) -> list[str]:
    times = []
    async with FakeOpenAI() as fake:
        fake.responder = lambda req: Reply(content="hello")
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                env = {**{k: v for k, v in os.environ.items() if not k.startswith("VALET_")},
                       "VALET_LLM_BASE_URL": fake.base_url, "VALET_LLM_MODEL": "m",
                       "VALET_DATABASE_URL": f"sqlite:///{tmp}/v.db",
                       "VALET_CONFIG": os.devnull, "PYTHONPATH": str(ROOT)}
                t0 = time.perf_counter()
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "bot", "chat", "--pipe", env=env,
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
                assert proc.stdin and proc.stdout
                proc.stdin.write(b"hi\n")
                await proc.stdin.drain()
                await proc.stdout.readline()
                times.append(time.perf_counter() - t0)
                proc.stdin.close()
                await proc.wait()
    return ["Start-up: process start to first answered message (fresh SQLite file)",
            f"  median {statistics.median(times) * 1000:.0f} ms   "
            f"min {min(times) * 1000:.0f} ms   max {max(times) * 1000:.0f} ms   n={repeats}"]
