"""`make bench`: run every benchmark and print its numbers (`make bench BENCH_ARGS="--workers
2 gateway"`: one benchmark, with two worker processes where it can use them)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import sys

BENCHMARKS = ["llm_overhead", "console_path", "concurrency", "startup", "statements", "gateway",
              "hostile_input", "sms_webhook", "triggers", "telegram", "many_at_once",
              "prompt_tokens", "memory", "roles", "sms_cost"]


async def main(names: list[str], workers: int) -> None:
    for name in names:
        module = importlib.import_module(f"tests.bench.{name}")
        # A benchmark that can run with several worker processes takes their number.
        takes_workers = "workers" in inspect.signature(module.run).parameters
        for text in await (module.run(workers=workers) if takes_workers else module.run()):
            print(text, flush=True)
        print()


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes that run turns, where a benchmark can use several")
    parser.add_argument("names", nargs="*", help=f"benchmarks (all: {' '.join(BENCHMARKS)})")
    args = parser.parse_args(sys.argv[1:])
    asyncio.run(main(args.names or BENCHMARKS, args.workers))
