"""Property: whatever text or bytes arrive (any unicode, bytes as the console decodes them,
huge, empty), on SQLite and Postgres, every message is stored once and answered, and no
exception escapes."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config.policies import AccessSettings, ChannelAccess
from bot.gateway.deps import ReceiveResult
from bot.text.sanitize import clean_text
from channels.console.channel import ConsoleChat
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming

PROPERTY = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# Huge, but under the fake LLM server's 1 MB request limit even with \u escapes.
huge = st.builds(lambda unit, n: unit * n, st.text(min_size=1, max_size=8),
                 st.integers(min_value=5_000, max_value=20_000))
as_console_reads = st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace"))
texts = st.one_of(st.text(max_size=300), as_console_reads, huge, st.just(""),
                  st.sampled_from(["\x00", "\ud800", "\udcff\udcfe", " \n\t ", "\u202e"]))
names = st.one_of(st.just(""), st.text(max_size=40))


@pytest.fixture
async def channels(db_url, app_factory, fake_llm):
    """An app on SQLite or Postgres answering every message, with recording senders for the
    `test` channel (alice allowed) and the console (the owner)."""
    fake_llm.responder = lambda req: LLMReply(content="noted")
    access = AccessSettings(channels={"test": ChannelAccess(policy="pairing", allow=["alice"])})
    # Fifty messages a minute from one person: over the rate limit, all but one would get
    # silence (that limit has its own tests); here every message is answered.
    app = await app_factory(database_url=db_url, access=access, rate_limit_per_minute=10_000)
    test, console = RecordingSender("test"), RecordingSender("console")
    app.add_channel(test)
    app.add_channel(console)
    await app.start()
    return app, test, console


async def inbox_rows(app, channel: str, external_id: str) -> int:
    return await app.db.fetchval(
        "SELECT count(*) FROM inbox WHERE channel = $1 AND external_id = $2",
        channel, external_id)


@PROPERTY
@given(text=texts, name=names)
async def test_any_text_through_the_gateway_is_stored_once_and_answered(channels, text, name):
    app, sender, _ = channels
    msg = incoming(text, address="alice", name=name)
    before = len(sender.sent)
    assert await app.gateway.receive(msg) is ReceiveResult.ACCEPTED
    assert await app.gateway.receive(msg) is ReceiveResult.DUPLICATE
    await app.gateway.wait_idle()
    assert len(sender.sent) == before + 1
    assert await inbox_rows(app, "test", msg.external_id) == 1
    stored = await app.db.fetchval(
        "SELECT text FROM inbox WHERE channel = 'test' AND external_id = $1", msg.external_id)
    assert stored == clean_text(text)


lines = st.lists(st.one_of(st.binary(max_size=120), st.text(max_size=60).map(str.encode)),
                 max_size=4).map(lambda ls: [line.replace(b"\n", b"") for line in ls])


@PROPERTY
@given(raw_lines=lines)
async def test_any_bytes_typed_at_the_console_are_each_answered(channels, raw_lines):
    app, _, console = channels
    expected = [clean_text(line).strip() for line in raw_lines]
    expected = [text for text in expected if text]
    before = len(console.sent)
    rows_before = await app.db.fetchval("SELECT count(*) FROM inbox WHERE channel = 'console'")
    stdin = io.BytesIO(b"".join(line + b"\n" for line in raw_lines))
    assert await ConsoleChat(app.gateway, now=app.clock.now).run_pipe(stdin) == 0
    assert len(console.sent) == before + len(expected)
    rows = await app.db.fetch(
        "SELECT text FROM inbox WHERE channel = 'console' ORDER BY id")
    assert [r["text"] for r in rows[rows_before:]] == expected
