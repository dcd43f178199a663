"""Valet modules a plain chat runs ([house] item 5, [lean] item 5; goal: a "hi" at most 40):
a known person's "hi" at the console, on SQLite with the default settings (memory on, tools
by capability) and the real OpenAI client talking to the fake server on loopback, counted by
tests/turn_modules.py from the gateway's receive to the reply's delivery.
tests/integration/test_plain_chat.py holds the ceiling.

  floor  "/help" from the same person: a command answered without the LLM, the same door,
         queue and delivery (what any answered message runs)
"""

from __future__ import annotations

import asyncio
import collections
import sys
import tempfile

from bot.app import App
from bot.config import load_settings
from tests.fakes.fake_openai import FakeOpenAI, Reply
from tests.turn_modules import UNTICKED, console_chat, modules_run

GOAL = 40


async def _counted(fake: FakeOpenAI, url: str
                   ) -> tuple[collections.Counter[str], collections.Counter[str]]:
    settings = load_settings(None, env={
        "VALET_DATABASE_URL": url, "VALET_CONFIG": "/dev/null",
        "VALET_LLM_BASE_URL": fake.base_url, "VALET_LLM_MODEL": "m", "VALET_LLM_API_KEY": "k"})
    app = await App.build(settings.model_copy(update=UNTICKED))
    try:
        chat = await console_chat(app)
        await chat.say("hello there")  # the first message makes the person
        await chat.say("/help")  # and the command table
        return await modules_run(chat, "hi there"), await modules_run(chat, "/help")
    finally:
        await app.close()


def _by_package(seen: collections.Counter[str]) -> str:
    packages = collections.Counter(".".join(m.split(".")[:2]) for m in seen)
    return ", ".join(f"{p} {n}" for p, n in sorted(packages.items(), key=lambda i: -i[1]))


async def run() -> list[str]:
    """Counted in a process of its own: what earlier benchmarks left running in this one
    (their channels' loops) would be counted with the turn."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench.turn_modules", stdout=asyncio.subprocess.PIPE)
    out, _ = await child.communicate()
    if child.returncode != 0:
        raise RuntimeError(f"the count exited {child.returncode}")
    return out.decode().splitlines()


async def counted() -> list[str]:
    async with FakeOpenAI() as fake:
        fake.responder = lambda request: Reply(content="Hello! How can I help?")
        with tempfile.TemporaryDirectory() as tmp:
            hi, command = await _counted(fake, f"sqlite:///{tmp}/m.db")
    met = "met" if len(hi) <= GOAL else "NOT MET"
    return [f"Modules a plain chat runs (console, SQLite, fake LLM on loopback; goal: a \"hi\" "
            f"at most {GOAL})",
            f"  \"hi\": {len(hi)} modules, {sum(hi.values())} calls; floor \"/help\" (no LLM): "
            f"{len(command)} modules; goal <= {GOAL}: {met}",
            f"    by package: {_by_package(hi)}",
            f"    beyond the floor: {', '.join(sorted(set(hi) - set(command)))}"]


if __name__ == "__main__":
    for line in asyncio.run(counted()):
        print(line)
