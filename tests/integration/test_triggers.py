"""Triggers as a person lives them: reminders and summaries arrive once, at their local time,
across daylight-saving changes and restarts; events and conditions start runs; a plain reminder
costs no LLM call."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.config.policies import AccessSettings, ChannelAccess
from bot.contracts.clock import FakeClock
from bot.contracts.envelopes import Notification
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.helpers import RecordingSender, incoming, said
from triggers.engine import FIRING
from triggers.events import Event
from triggers.executors import RunContext
from triggers.model import ConditionCheck, TaskStatus
from triggers.service import Owner

NY = "America/New_York"


@pytest.fixture
def valet(app_factory):
    """An app with Alice known on `test`; `restart()` builds a new process on the same
    database and clock."""

    async def make(clock: FakeClock, **overrides):
        access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                                allow=["alice"])})
        app = await app_factory(access=access, clock=clock, **overrides)
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.start()
        admitted = await app.access.admit("test", "alice", "Alice", "hi", clock.now())
        assert admitted.user is not None
        return app, admitted.user, sender

    return make


async def settle(app) -> None:
    await app.triggers.engine.tick()
    await asyncio.wait_for(app.gateway.wait_idle(), 60)


async def run_until(app, clock: FakeClock, until: datetime, step: timedelta) -> None:
    while clock.now() < until:
        clock.advance(step.total_seconds())
        await settle(app)


@pytest.mark.parametrize("start,wall", [
    (datetime(2026, 3, 6, 12, tzinfo=UTC), "30 2 * * *"),  # spring forward, 8 March
    (datetime(2026, 10, 30, 12, tzinfo=UTC), "30 1 * * *")])  # fall back, 1 November
async def test_a_daily_run_keeps_its_local_time_across_both_daylight_saving_changes(
        valet, start, wall):
    if True:
        clock = FakeClock(start)
        app, alice, sender = await valet(clock)
        await app.users.set_timezone(alice.id, NY)
        await app.triggers.service.schedule(
            Owner(alice.id, NY), name="stretch", schedule=wall, executor="reminder",
            action={"text": "stretch"})
        await run_until(app, clock, start + timedelta(days=4), timedelta(minutes=10))
        runs = await app.db.fetch("SELECT scheduled_at, outcome FROM trigger_runs"
                                  " ORDER BY scheduled_at")
        shown = [r["scheduled_at"].astimezone(ZoneInfo(NY)).strftime("%d %H:%M %Z")
                 for r in runs]
        if wall.startswith("30 2"):  # spring forward on the 8th: 02:30 runs at 03:30, once
            assert shown == ["07 02:30 EST", "08 03:30 EDT", "09 02:30 EDT", "10 02:30 EDT"]
        else:  # fall back on 1 November: 01:30 happens twice, runs once
            assert shown == ["31 01:30 EDT", "01 01:30 EDT", "02 01:30 EST", "03 01:30 EST"]
        assert {r["outcome"] for r in runs} == {"sent"}
        assert sender.texts() == ["⏰ Reminder: stretch"] * 4


async def test_a_reminder_due_while_down_is_delivered_once_after_restart(valet, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app, alice, sender = await valet(clock)
    await app.triggers.service.remind(Owner(alice.id, "UTC"), "call mom",
                                      clock.now() + timedelta(hours=6))
    await app.close()  # down from 09:00 ...
    clock.advance(hours=8)  # ... until 17:00: the 15:00 reminder fell due meanwhile
    again, _, sender = await valet(clock)
    await settle(again)
    await settle(again)
    assert sender.texts() == ["⏰ Reminder: call mom"]
    [task] = await again.triggers.engine.store.of_user(alice.id, include_finished=True)
    assert task.status is TaskStatus.COMPLETED
    assert fake_llm.calls == 0  # a plain reminder costs no LLM request


@pytest.mark.parametrize("sent_before_the_crash", [False, True])
async def test_a_run_its_process_died_in_is_finished_by_the_next_leader_without_a_second_message(
        valet, sent_before_the_crash):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app, alice, first_sender = await valet(clock)
    due = clock.now() + timedelta(minutes=5)
    task = await app.triggers.service.remind(Owner(alice.id, "UTC"), "call mom", due)
    # The process records the run and moves the task on (one transaction), then dies before
    # its executor finishes: perhaps before the reminder was queued, perhaps after it went out.
    clock.advance(minutes=5)
    store = app.triggers.engine.store
    run = RunContext(task, due.strftime("%Y-%m-%dT%H:%M:%SZ"), due)
    assert await store.claim_run(task.id, run.run_key, due, FIRING, clock.now())
    assert await store.advance(task, None, clock.now(), ran=True)
    if sent_before_the_crash:
        await app.outbound.notify(Notification(alice.id, "⏰ Reminder: call mom",
                                              dedupe_key=run.message_key))
        for _ in range(500):
            if first_sender.texts():
                break
            await asyncio.sleep(0.02)
    await app.close()

    again, _, sender = await valet(clock)  # the next process to lead
    await settle(again)
    await settle(again)
    assert first_sender.texts() + sender.texts() == ["⏰ Reminder: call mom"]
    assert [r["outcome"] for r in await again.triggers.engine.store.runs(task.id)] == ["sent"]


async def test_a_summary_missed_by_hours_is_recorded_missed_not_sent(valet, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 6, tzinfo=UTC))
    app, alice, sender = await valet(clock)
    task = await app.triggers.service.morning_summary(Owner(alice.id, "UTC"),
                                                      "every day at 7:30")
    await app.close()
    clock.advance(hours=4)  # back at 10:00: the 07:30 summary is 2.5 hours old
    again, _, sender = await valet(clock)
    await settle(again)
    assert sender.texts() == [] and fake_llm.calls == 0
    runs = await again.triggers.engine.store.runs(task.id)
    assert [(r["scheduled_at"].hour, r["outcome"]) for r in runs] == [(7, "missed")]
    stored = await again.triggers.engine.store.get(task.id)
    assert stored.next_run_at == datetime(2026, 1, 6, 7, 30, tzinfo=UTC)


async def test_the_morning_summary_runs_once_through_the_loop_and_asks_only_for_what_exists(
        valet, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 7, 29, tzinfo=UTC))
    # Weather needs no key since issue 16: turned off here, it is "not configured".
    app, alice, sender = await valet(clock, tools={"weather": {"enabled": False}})
    await app.triggers.service.morning_summary(Owner(alice.id, "UTC"), "every day at 7:30")
    fake_llm.script(LLMReply(content="Morning! No reminders today; 1 note due: dentist."))
    clock.advance(60)
    await settle(app)
    await settle(app)  # a second tick in the same minute fires nothing
    assert sender.texts() == ["Morning! No reminders today; 1 note due: dentist."]
    asked = said(fake_llm.requests[0]["messages"][-1]["content"])
    assert asked.startswith("[Scheduled Task] Good-morning summary.")
    assert "reminders due today" in asked and "waiting for my approval" in asked
    assert "weather" not in asked and "calendar" not in asked  # not configured: not mentioned
    assert fake_llm.calls == 1


async def test_the_morning_summary_asks_for_the_weather_once_it_is_on_not_a_calendar_off(
        valet, fake_llm, monkeypatch):
    monkeypatch.delenv("VALET_SECRET_KEY", raising=False)  # calendar off: nothing connected
    clock = FakeClock(datetime(2026, 1, 5, 7, 29, tzinfo=UTC))
    app, alice, sender = await valet(clock)
    await app.triggers.service.morning_summary(Owner(alice.id, "UTC"), "every day at 7:30")
    fake_llm.script(LLMReply(content="Morning! Grey, 4°C."))
    clock.advance(60)
    await settle(app)
    asked = said(fake_llm.requests[0]["messages"][-1]["content"])
    assert "today's weather" in asked and "calendar" not in asked
    assert sender.texts() == ["Morning! Grey, 4°C."]


async def test_an_event_starts_an_orchestrator_run_once_per_event(valet, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app, alice, sender = await valet(clock)
    await app.triggers.service.on_event(
        Owner(alice.id, "UTC"), name="parcels", instruction="tell me what arrived",
        source="email", type="received", fields={"from": "*@amazon.com"})
    fake_llm.script(LLMReply(content="Your parcel from Amazon has shipped."))
    parcel = Event("email", "received", {"from": "ship@amazon.com", "subject": "Shipped"},
                   id="m1")
    await app.triggers.bus.publish(parcel)
    await app.triggers.bus.publish(parcel)  # delivered again (at-least-once): runs once
    await app.triggers.bus.publish(Event("email", "received", {"from": "boss@corp.example"}))
    await app.triggers.bus.drain()
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert sender.texts() == ["Your parcel from Amazon has shipped."]
    asked = said(fake_llm.requests[0]["messages"][-1]["content"])
    assert asked.startswith("[Event Trigger] email/received:") and "Shipped" in asked


async def test_a_condition_fires_once_on_the_edge_not_in_its_cooldown_nor_after_restart(
        valet, fake_llm, tmp_path):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    price = {"value": 120}

    app, alice, sender = await valet(clock)
    app.triggers.engine.checker = _fake_check(price)
    await app.triggers.service.when(
        Owner(alice.id, "UTC"), name="cheap flight", instruction="tell me the price",
        check=ConditionCheck("flight_price", {"route": "LHR-JFK"}, "<", 100,
                             cooldown_seconds=3600), every=timedelta(minutes=5))
    fake_llm.responder = lambda body: LLMReply(content="Flights are cheap now!")
    await run_until(app, clock, clock.now() + timedelta(minutes=10), timedelta(minutes=5))
    assert sender.texts() == []  # 120: not yet
    price["value"] = 90
    await run_until(app, clock, clock.now() + timedelta(minutes=15), timedelta(minutes=5))
    assert sender.texts() == ["Flights are cheap now!"]  # once, though it stays true
    price["value"] = 130
    await run_until(app, clock, clock.now() + timedelta(minutes=5), timedelta(minutes=5))
    price["value"] = 95  # true again, but within the hour's cooldown: nothing
    await run_until(app, clock, clock.now() + timedelta(minutes=10), timedelta(minutes=5))
    assert len(sender.texts()) == 1
    await app.close()
    clock.advance(hours=2)  # restart after the cooldown; still true: no new edge, no fire
    again, _, sender = await valet(clock)
    again.triggers.engine.checker = _fake_check(price)
    await run_until(again, clock, clock.now() + timedelta(minutes=10), timedelta(minutes=5))
    assert sender.texts() == [] and fake_llm.calls == 1
    assert "[Condition Trigger] Condition met: flight_price < 100 (observed '90 GBP')" in \
        said(fake_llm.requests[0]["messages"][-1]["content"])


def _fake_check(price):
    async def check(task, condition):
        return f"{price['value']} GBP"

    return check


async def test_a_person_schedules_a_reminder_by_saying_so_and_it_arrives(valet, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app, _, sender = await valet(clock)
    fake_llm.script(
        LLMReply(tool_calls=[ToolCall("draft_reminder", {"what": "call mom",
                                                         "when": "today at 15:00"})]),
        LLMReply(content="I'll remind you at 15:00."))
    await app.gateway.receive(incoming("remind me at 3pm to call mom"))
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    result = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "scheduled" in result["content"] and "does not send" not in result["content"]
    clock.advance(hours=6)
    await settle(app)
    assert sender.texts() == ["I'll remind you at 15:00.", "⏰ Reminder: call mom"]
    assert fake_llm.calls == 2  # the reminder itself made no LLM request


async def test_tasks_are_listed_in_words_with_their_next_run(valet):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))  # a Monday
    app, alice, _ = await valet(clock)
    service = app.triggers.service
    me = Owner(alice.id, "Europe/Paris")
    summary = await service.morning_summary(me, "weekdays at 7:30")
    await service.remind(me, "call mom", datetime(2026, 1, 5, 14, tzinfo=UTC))
    listing = await service.listing(alice.id)
    assert f"{summary.id}: Morning summary — weekdays at 7:30, next tomorrow" in listing
    assert "Reminder: call mom — today at 15:00" in listing
    await service.pause(alice.id, summary.id)
    assert "[paused]" in await service.listing(alice.id)
    with pytest.raises(ValueError, match="no task"):
        await service.delete("someone-else", summary.id)


async def test_a_run_with_nothing_to_report_is_marked_so_for_a_quiet_task(valet, fake_llm):
    clock = FakeClock(datetime(2026, 1, 5, 7, 59, tzinfo=UTC))
    app, alice, _ = await valet(clock)
    service = app.triggers.service
    task = await service.schedule(Owner(alice.id, "UTC"), name="inbox watch",
                                  schedule="every day at 8:00", instruction="anything new?",
                                  quiet_when_nothing=True)
    fake_llm.script(LLMReply(tool_calls=[ToolCall("nothing_to_report", {"reason": "empty"})]),
                    LLMReply(content="Nothing new."))
    clock.advance(60)
    await settle(app)
    [run] = await service.store.runs(task.id)
    assert run["outcome"] == "nothing" and run["nothing_to_report"] == 1
    # The gateway asks this before sending a triggered turn's reply (see docs/triggers.md).
    assert await service.silenced(f"task:{task.id}:{run['run_key']}")
    assert not await service.silenced(f"task:{task.id}:another-run")


async def test_a_reminder_due_in_quiet_hours_waits_for_the_morning_and_goes_once(valet):
    clock = FakeClock(datetime(2026, 1, 5, 22, 0, tzinfo=UTC))
    app, alice, sender = await valet(clock)
    await app.users.set_quiet_hours(alice.id, "22:00", "07:00")
    await app.triggers.service.remind(Owner(alice.id, "UTC"), "take the bins out",
                                      datetime(2026, 1, 5, 23, 0, tzinfo=UTC))
    await run_until(app, clock, datetime(2026, 1, 6, 6, 30, tzinfo=UTC), timedelta(minutes=30))
    assert sender.texts() == []  # due at 23:00, held by quiet hours
    await run_until(app, clock, datetime(2026, 1, 6, 8, 0, tzinfo=UTC), timedelta(minutes=10))
    assert sender.texts() == ["⏰ Reminder: take the bins out"]


async def test_a_reminder_nobody_can_be_reached_for_is_recorded_unreachable_not_sent(valet):
    clock = FakeClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    app, alice, sender = await valet(clock)
    await app.identities.set_opted_out("test", "alice", True, at=clock.now())  # her only way
    await app.triggers.service.remind(Owner(alice.id, "UTC"), "call mom",
                                      clock.now() + timedelta(minutes=5))
    await run_until(app, clock, clock.now() + timedelta(minutes=10), timedelta(minutes=1))
    assert sender.texts() == []
    [run] = await app.db.fetch("SELECT outcome FROM trigger_runs")
    assert run["outcome"] == "unreachable"
