"""`make bench`: run every benchmark and print its numbers."""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys

BENCHMARKS = ["llm_overhead", "console_path", "concurrency", "startup", "gateway", "hostile_input",
              "sms_webhook", "triggers", "telegram", "many_at_once", "prompt_tokens", "memory",
              "roles"]


async def main(names: list[str]) -> None:
    for name in names:
        module = importlib.import_module(f"tests.bench.{name}")
        for text in await module.run():
            print(text, flush=True)
        print()


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(main(sys.argv[1:] or BENCHMARKS))
