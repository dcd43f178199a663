"""`make bench` as the README shows it: the Makefile's recipe (`python -m tests.bench
BENCH_ARGS`) run as a process. Every benchmark runs to the end with a small size (`--quick`)
and prints its figures beside their floor and the goal they are held to; a benchmark that
raises fails its test here (not only at the next `make bench`), and the command goes on with
the others and exits 1 naming it."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from tests.bench.__main__ import BENCHMARKS, main
from tests.e2e.test_console_pipe import ROOT

pytestmark = pytest.mark.slow


async def bench(*args: str, timeout: float = 600) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VALET_", "OPENAI_"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench", *args, env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("name", BENCHMARKS)
async def test_each_benchmark_runs_to_the_end_with_its_floor_and_goal(name):
    code, out, err = await bench("--quick", name)
    assert code == 0, f"{out}\n{err}"
    assert "FAILED" not in out and "Traceback" not in err, f"{out}\n{err}"
    assert "floor" in out.lower(), out
    assert "goal" in out.lower(), out
    assert "Unclosed" not in err, err  # every session, connector and server closed


async def test_make_bench_runs_a_benchmark_and_prints_its_numbers():
    code, out, err = await bench("statements")
    assert code == 0, err
    assert "SQLite:" in out and "statements per plain turn" in out


async def test_an_unknown_benchmark_is_refused_in_one_line():
    code, _, err = await bench("--quick", "no_such_bench", timeout=60)
    assert code == 2
    assert "unknown benchmark no_such_bench" in err and "Traceback" not in err


async def test_a_benchmark_that_raises_is_reported_and_the_others_still_run(capsys,
                                                                          monkeypatch):
    monkeypatch.setenv("VALET_BENCH_QUICK", "1")
    assert await main(["no_such_bench", "concurrency"], workers=1) == 1
    out = capsys.readouterr()
    assert "no_such_bench: FAILED" in out.out
    assert "ModuleNotFoundError" in out.err  # its traceback
    assert "Concurrent tools" in out.out  # the next one ran
    assert out.out.rstrip().endswith("benchmarks that failed: no_such_bench")
