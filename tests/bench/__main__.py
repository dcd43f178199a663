"""`make bench`: run every benchmark to the end and print its numbers, each beside its floor
and its goal (`make bench BENCH_ARGS="--workers 2 gateway"`: one benchmark, with two worker
processes where it can use them; `--quick`: every benchmark small, as the test suite runs
them). A benchmark that raises is reported with its traceback, the others still run, and the
command exits 1 naming it."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import os
import sys
import time
import traceback

from tests.bench.size import QUICK_ENV

BENCHMARKS = ["llm_overhead", "console_path", "concurrency", "startup", "statements", "gateway",
              "hostile_input", "sms_webhook", "triggers", "telegram", "many_at_once",
              "prompt_tokens", "prompt_cache", "memory", "roles", "sms_cost", "turn_modules",
              "sms_lines", "backlog_replies"]


async def run_one(name: str, workers: int) -> bool:
    """Run benchmark `name` and print its lines; False when it raised (its traceback shown)."""
    started = time.monotonic()
    try:
        module = importlib.import_module(f"tests.bench.{name}")
        # A benchmark that can run with several worker processes takes their number.
        takes_workers = "workers" in inspect.signature(module.run).parameters
        lines = await (module.run(workers=workers) if takes_workers else module.run())
    except Exception:
        print(f"{name}: FAILED after {time.monotonic() - started:.1f} s", flush=True)
        traceback.print_exc()
        print(flush=True)
        return False
    for text in lines:
        print(text, flush=True)
    print(flush=True)
    return True


async def main(names: list[str], workers: int) -> int:
    failed = [name for name in names if not await run_one(name, workers)]
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes that run turns, where a benchmark can use several")
    parser.add_argument("--quick", action="store_true",
                        help="every benchmark small: does it run, not how fast")
    parser.add_argument("names", nargs="*", help=f"benchmarks (all: {' '.join(BENCHMARKS)})")
    args = parser.parse_args(sys.argv[1:])
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (known: {' '.join(BENCHMARKS)})")
    if args.quick:  # read by tests.bench.size, here and in the processes a benchmark starts
        os.environ[QUICK_ENV] = "1"
    sys.exit(asyncio.run(main(args.names or BENCHMARKS, args.workers)))
