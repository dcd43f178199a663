"""Start-up loads what the configuration uses and nothing else: a `valet chat` of the embedded
default (SQLite, no Telegram, SMS, mail, calendar, MCP, embeddings, console) answers without
importing their libraries; and the garbage collector, paused while Valet starts, runs again
once it has started (what start-up made is frozen)."""

from __future__ import annotations

import json
import sys

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.fakes.fake_openai import Reply

# Libraries only some configurations use (the test lists what each is for).
UNUSED = {
    "telegram": "Telegram", "twilio": "SMS", "requests": "SMS (Twilio's client)",
    "aiosmtplib": "sending mail", "aioimaplib": "reading mail", "icalendar": "a calendar",
    "caldav": "a CalDAV calendar", "mcp": "an MCP server", "numpy": "embeddings",
    "phonenumbers": "a phone number", "jinja2": "the web console", "lxml": "reading a page",
    "ruamel": "writing a claimed owner into valet.yaml", "cryptography": "a secret key",
    "prompt_toolkit": "a terminal (the chat here is piped)",
}

PROBE = """
import atexit, gc, json, sys
def report():
    json.dump({"modules": sorted({m.split(".")[0] for m in sys.modules}),
               "collector_on": gc.isenabled(), "frozen": gc.get_freeze_count()},
              open(sys.argv[1], "w"))
atexit.register(report)
from bot.cli import main
sys.exit(main(["chat", "--pipe"]))
"""


async def test_a_default_chat_answers_without_the_libraries_it_does_not_use(fake_llm,
                                                                            tmp_path):
    import asyncio

    fake_llm.responder = lambda body: Reply(content="hello")
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m")
    env.pop("VALET_TOOL_EXPOSURE")
    report = tmp_path / "report.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBE, str(report), env=env, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(b"hi\n"), 120)
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip() == "hello"
    found = json.loads(report.read_text())
    loaded = {name: why for name, why in UNUSED.items() if name in found["modules"]}
    assert loaded == {}, f"imported though unused: {loaded}"
    assert found["collector_on"] and found["frozen"] > 0
