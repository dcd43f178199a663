"""`make bench` as the README shows it: the Makefile's recipe (`python -m tests.bench
BENCH_ARGS`) run as a process, with one quick benchmark, prints its numbers."""

from __future__ import annotations

import asyncio
import os
import sys

from tests.e2e.test_console_pipe import ROOT


async def test_make_bench_runs_a_benchmark_and_prints_its_numbers():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VALET_", "OPENAI_"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench", "statements", env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, err.decode()
    assert "SQLite:" in out.decode() and "statements per plain turn" in out.decode()
