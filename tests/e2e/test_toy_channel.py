"""A channel added from outside Valet: one package (tests/fakes/toy_channel) and one line of
valet.yaml (`channel_modules:`). A real `valet serve` runs it beside its own: a person's
message comes in on its webhook, goes through the gateway and the LLM, and the reply leaves
through the outbox and the toy channel's sender to the toy service. A card reaches it as text
(the toy service has no buttons), and the person's "yes" approves it: the action runs once."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.e2e.test_console_pipe import ROOT, clean_env
from tests.e2e.test_serve import _get, _until_up
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.helpers import said, until
from tests.ports import free_port

CONFIG = """memory:
  enabled: false
channel_modules: [tests.fakes.toy_channel.spec]
access:
  channels:
    toy: {policy: allowlist, allow: [ana]}
"""


class ToyService:
    """The toy service's API: what Valet posts to it is kept, in order."""

    def __init__(self) -> None:
        self.sent: list[dict[str, str]] = []
        self.arrived = asyncio.Event()
        app = web.Application()
        app.router.add_post("/messages", self._message)
        self.server = TestServer(app, host="127.0.0.1", port=0)

    async def _message(self, request: web.Request) -> web.Response:
        self.sent.append(await request.json())
        self.arrived.set()
        return web.json_response({"id": len(self.sent)})

    @property
    def url(self) -> str:
        return str(self.server.make_url("")).rstrip("/")


@dataclass
class Served:
    """A `valet serve` with the toy channel on: the toy service, an HTTP session, Valet's
    address, and once it stopped, what it logged."""

    toy: ToyService
    http: aiohttp.ClientSession
    base: str
    log: str = ""


@contextlib.asynccontextmanager
async def toy_serve(fake_llm: FakeOpenAI, tmp_path: Path, config: str = ""
                    ) -> AsyncIterator[Served]:
    """`valet serve` with the toy channel on (the fake LLM, the toy service), stopped with
    SIGTERM at the end: it must stop cleanly. `config`: more of valet.yaml."""
    toy = ToyService()
    await toy.server.start_server()
    port = free_port()
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model", VALET_HTTP_PORT=str(port),
                    VALET_TOY_URL=toy.url, VALET_LOG_LEVEL="INFO")
    (tmp_path / "valet.yaml").write_text(CONFIG + config)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        await _until_up(f"{base}/readyz", proc)
        async with aiohttp.ClientSession() as http:
            served = Served(toy, http, base)
            yield served
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        served.log = err.decode()
        assert proc.returncode == 0, served.log
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await toy.server.close()


async def test_a_toy_channel_from_one_package_and_one_line_carries_a_conversation(
        fake_llm: FakeOpenAI, tmp_path):
    fake_llm.script(Reply(content="Hello from Valet, through the toy channel."))
    async with toy_serve(fake_llm, tmp_path) as served:
        status, body = await _get(f"{served.base}/readyz")
        assert status == 200 and body["checks"] == {"database": True, "toy": True}
        async with served.http.post(f"{served.base}/toy/inbound", json={
                "id": "m1", "from": "ana", "text": "hello, toy"}) as response:
            assert response.status == 200
        await asyncio.wait_for(served.toy.arrived.wait(), 30)
        async with served.http.get(f"{served.base}/metrics") as response:
            metrics = await response.text()
    assert served.toy.sent == [{"to": "ana",
                                "text": "Hello from Valet, through the toy channel."}]
    [request] = fake_llm.requests
    assert request["messages"][-1]["role"] == "user"
    assert said(request["messages"][-1]["content"]) == "hello, toy"
    assert "channel toy started (/toy/inbound)" in served.log
    # Its webhook is counted like Valet's own channels' (its spec's webhook_prefix).
    assert 'valet_webhook_requests_total{channel="toy",result="acknowledged"} 1.0' in metrics


async def test_the_toy_channel_owns_its_section_of_valet_yaml(fake_llm: FakeOpenAI, tmp_path):
    """`toy:` is the toy package's (tests/fakes/toy_channel/settings.py): read by `valet serve`
    through `channel_modules:`, and a typo in it refused with its line, as the core's are."""
    fake_llm.script(Reply(content="Signed and sent."))
    async with toy_serve(fake_llm, tmp_path, "toy:\n  signature: from Valet\n") as served:
        async with served.http.post(f"{served.base}/toy/inbound", json={
                "id": "m1", "from": "ana", "text": "hello"}) as response:
            assert response.status == 200
        await asyncio.wait_for(served.toy.arrived.wait(), 30)
    assert served.toy.sent == [{"to": "ana", "text": "Signed and sent.",
                                "signature": "from Valet"}]

    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model")
    (tmp_path / "valet.yaml").write_text(CONFIG + "toy:\n  signatur: from Valet\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 2, err.decode()
    assert f"{tmp_path / 'valet.yaml'}:8: toy.signatur: unknown setting; did you mean " \
        "signature?" in err.decode(), err.decode()
    assert "Traceback" not in err.decode()


def notes(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT title FROM notes")]


def approvals(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT tool_name, status FROM approvals"))


async def test_a_card_on_the_toy_channel_is_shown_and_approved_once(fake_llm: FakeOpenAI,
                                                                      tmp_path):
    db = tmp_path / "valet.db"
    async with toy_serve(fake_llm, tmp_path) as served:
        ids, toy = iter(range(1, 100)), served.toy

        async def say(text: str) -> str:
            before = len(toy.sent)
            async with served.http.post(f"{served.base}/toy/inbound", json={
                    "id": f"m{next(ids)}", "from": "ana", "text": text}) as response:
                assert response.status == 200
            await until(lambda: len(toy.sent) > before, f"a reply to {text!r}", timeout=60)
            return toy.sent[-1]["text"]

        fake_llm.script(
            Reply(tool_calls=[ToolCall("take_note", {"title": "Dentist", "body": "Tue 3pm"})]),
            Reply(content="Noted."))
        assert await say("note: dentist tue 3pm") == "Noted."
        # Deleting it waits for the OK: the card comes as text, with how to answer.
        fake_llm.script(Reply(tool_calls=[ToolCall("delete_note", {"note_id": 1})]))
        card = await say("delete the dentist note")
        # (channels.plain_cards: the words SMS's and WhatsApp's cards share)
        assert "Delete the note #1 “Dentist”? Answer yes or no" in card, card
        assert "\nnote_id: 1" in card, card  # every argument shown
        assert notes(db) == ["Dentist"]
        fake_llm.script(Reply(content="Deleted."))
        assert (await say("yes")).endswith("Deleted.")
        assert notes(db) == []
        assert approvals(db) == [("delete_note", "executed")]
        # Nothing waits any more: another "yes" is only a message, and runs nothing again.
        fake_llm.script(Reply(content="Nothing else to do."))
        assert await say("yes") == "Nothing else to do."
        assert approvals(db) == [("delete_note", "executed")]
