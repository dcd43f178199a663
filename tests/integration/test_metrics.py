"""`/metrics` as an operator scrapes it: the counters move with a turn, a tool call, an
approval and an SMS sent; webhooks are counted acknowledged or rejected; the token is required
when set, and without one only this machine (not through a proxy) may read it."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

from bot.app.serve import build_web_app
from bot.plumbing.metrics import Metrics
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.integration.sms_harness import sms_world
from tests.integration.test_approvals import registry_file

EMAIL = {"to": "team@corp.example", "subject": "Q3", "body": "Numbers attached."}

Sample = tuple[str, tuple[tuple[str, str], ...]]


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()


@pytest.fixture
async def world(app_factory, tmp_path):
    world, close = await sms_world(app_factory, agents=registry_file(tmp_path))
    # The texts go to `valet serve`'s own web application (its middleware counts webhooks).
    server = TestServer(build_web_app(world.app, [world.channel], env={}))
    await server.start_server()
    world.server = server
    yield world
    await server.close()
    await close()


async def scrape(world, headers: dict[str, str] | None = None) -> dict[Sample, float]:
    async with world.http.get(world.url("/metrics"), headers=headers or {}) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = await resp.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict[Sample, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def moved(before: dict[Sample, float], after: dict[Sample, float], name: str,
          **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def test_counters_move_with_a_turn_a_tool_call_an_approval_and_an_sms(world, fake_llm):
    start = await scrape(world)
    assert value(start, "valet_users_active_today") == 0

    fake_llm.script(LLMReply(tool_calls=[ToolCall("calculate", {"expression": "6*7"})]),
                    LLMReply(content="It is 42."))
    await world.text("what is six times seven?")
    await world.idle()
    after_turn = await scrape(world)
    assert moved(start, after_turn, "valet_turns_total", stop="final_answer") == 1
    assert moved(start, after_turn, "valet_turn_duration_seconds_count") == 1
    assert moved(start, after_turn, "valet_tool_calls_total", tool="calculate",
                 outcome="success") == 1
    assert moved(start, after_turn, "valet_llm_requests_total", model="fake-model") == 2
    assert moved(start, after_turn, "valet_llm_tokens_total", model="fake-model",
                 direction="input") > 0
    assert moved(start, after_turn, "valet_sms_segments_sent") == 1
    assert moved(start, after_turn, "valet_webhook_requests_total", channel="sms",
                 result="acknowledged") == 1
    assert value(after_turn, "valet_users_active_today") == 1

    fake_llm.script(LLMReply(tool_calls=[ToolCall("send_email", EMAIL)]))
    await world.text("send the team the Q3 note")
    await world.idle()
    asked = await scrape(world)
    assert moved(after_turn, asked, "valet_turns_total", stop="waiting_for_user") == 1
    assert moved(after_turn, asked, "valet_tool_calls_total", tool="send_email",
                 outcome="waiting") == 1
    assert value(asked, "valet_approvals", outcome="pending") == 1

    fake_llm.script(LLMReply(content="Sent to the team."))
    await world.text("1")
    await world.idle()
    approved = await scrape(world)
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]
    assert value(approved, "valet_approvals", outcome="pending") == 0
    assert value(approved, "valet_approvals", outcome="executed") == 1
    prompt = world.replies()[1]
    assert len(prompt) > 160  # the approval prompt takes two segments (GSM-7)
    assert moved(start, approved, "valet_sms_segments_sent") == 1 + 2 + 1
    assert value(approved, "valet_outbox_depth", channel="sms") == 0
    assert value(approved, "valet_outbox_dead_letters", channel="sms") == 0
    assert value(approved, "valet_users_active_today") == 1

    refused = await world.text("forged", signature="not-a-signature")
    assert refused.status == 403
    after_forgery = await scrape(world)
    assert moved(approved, after_forgery, "valet_webhook_requests_total", channel="sms",
                 result="rejected") == 1


async def test_waiting_messages_show_as_outbox_depth_and_age(world):
    now = world.app.clock.now()
    await world.app.db.execute(
        "INSERT INTO outbox (dedupe_key, channel, address, text, status, next_attempt_at,"
        " created_at) VALUES ('k1', 'sms', '+1', 'hi', 'pending', $1, $1),"
        " ('k2', 'sms', '+1', 'hi', 'dead', $1, $1)", now)
    world.app.clock.advance(90)
    samples = await scrape(world)
    assert value(samples, "valet_outbox_depth", channel="sms") == 1
    assert value(samples, "valet_outbox_oldest_age_seconds", channel="sms") == 90
    assert value(samples, "valet_outbox_dead_letters", channel="sms") == 1


async def test_the_metrics_token_is_required_when_set(world):
    server = TestServer(build_web_app(world.app, [world.channel],
                                      env={"VALET_METRICS_TOKEN": "m-secret"}))
    await server.start_server()
    try:
        url = str(server.make_url("/metrics"))
        async with world.http.get(url) as resp:
            assert resp.status == 401
        async with world.http.get(url, headers={"Authorization": "Bearer wrong"}) as resp:
            assert resp.status == 401
        async with world.http.get(url, headers={"Authorization": "Bearer m-secret"}) as resp:
            assert resp.status == 200
            assert "valet_turn_duration_seconds_count 0.0" in await resp.text()
    finally:
        await server.close()


async def test_without_a_token_a_proxied_request_is_refused(world):
    async with world.http.get(world.url("/metrics"),
                              headers={"X-Forwarded-For": "203.0.113.9"}) as resp:
        assert resp.status == 403
        assert "VALET_METRICS_TOKEN" in await resp.text()


def test_two_apps_in_one_process_keep_their_own_counts():
    first, second = Metrics(), Metrics()
    first.turn_finished("final_answer", 0.5)
    assert b'valet_turns_total{stop="final_answer"} 1.0' in first.render()
    assert b'valet_turns_total{stop="final_answer"}' not in second.render()


async def test_a_reminder_fired_late_shows_as_scheduler_lag(app_factory):
    from datetime import UTC, datetime, timedelta

    from bot.contracts.clock import FakeClock
    from triggers.service import Owner

    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app = await app_factory(clock=clock)
    await app.start()
    owner = await app.ensure_owner()
    await app.triggers.service.remind(Owner(owner.id, "UTC"), "call mom",
                                      clock.now() + timedelta(minutes=10))
    clock.advance(minutes=10, seconds=7)  # the engine wakes 7 s after the reminder fell due
    await app.triggers.engine.tick()
    text = app.metrics.render().decode()
    assert "valet_scheduler_lag_seconds_count 1.0" in text
    assert "valet_scheduler_lag_seconds_sum 7.0" in text
