"""Where the time goes: a benchmark's work run again under cProfile (CPU time, so the machine's
load moves it less), its top entries by the time spent in each function itself. Profiling
slows Python calls more than C ones, so the shares are a guide to what to look at, not the
measured figure (which is taken without the profiler)."""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2]) + "/"
TOP = 8


def _where(filename: str, function: str) -> str:
    if filename.startswith("~") or filename.startswith("<"):
        return function.strip("<>")  # a C function: its own name says it
    for marker in ("site-packages/", "/lib/python3"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            if marker == "/lib/python3":
                filename = "stdlib" + filename[filename.index("/"):]
            break
    return f"{filename.removeprefix(ROOT)}:{function}"


async def profiled(work: Callable[[], Awaitable[None]], per: int, *, top: int = TOP,
                   indent: str = "      ") -> list[str]:
    """`work` under the profiler; its `top` entries by own CPU time, per `per` items."""
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    try:
        await work()
    finally:
        profile.disable()
    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])  # type: ignore[attr-defined]
    lines = [f"{indent}where the time goes (cProfile, own time; {total * 1000 / per:.2f} ms "
             "per item profiled):"]
    for (filename, _, function), (_, _, own, _, _) in rows[:top]:
        lines.append(f"{indent}  {own / total:5.1%}  {own * 1000 / per:6.3f} ms  "
                     f"{_where(filename, function)}")
    return lines
