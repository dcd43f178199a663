"""The web console's pages and actions over real HTTP, on the real stores: an approval decided
there runs once through the approvals package; tasks, dead letters, people, pairing, memory,
usage and health."""

from __future__ import annotations

import asyncio
import html
import json
import re

import pytest

from bot.config.channel_sections import ConsoleSettings
from bot.config.sections import MemorySettings
from bot.contracts.approvals import ApprovalStatus
from bot.gateway.outbox import Lane
from bot.people.console_login import ConsoleLogins
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply, ToolCall
from tests.helpers import RecordingSender, requests_of
from tests.helpers import said as person_said
from tests.integration.console_harness import console_client, say, sign_in
from tests.integration.test_approvals import EMAIL, registry_file

ON = ConsoleSettings(enabled=True, sms_price_per_segment=0.01, currency="EUR")


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()


@pytest.fixture
async def world(app_factory, tmp_path):
    app = await app_factory(console=ON, agents=registry_file(tmp_path))
    client = await console_client(app)
    csrf = await sign_in(client, app)
    yield app, client, csrf
    await client.close()


async def text_of(client, path: str) -> str:
    response = await client.get(path)
    assert response.status == 200, path
    return html.unescape(await response.text())


def said(response_url) -> str:  # type: ignore[no-untyped-def]
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(str(response_url)).query).get("said", [""])[0]


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_an_approval_decided_in_the_console_runs_once_as_its_person(world, fake_llm):
    app, client, csrf = world
    kim = await app.users.ensure("kim", display_name="Kim", timezone="Europe/Paris",
                                 at=app.clock.now())
    sender = RecordingSender("test")
    app.add_channel(sender)
    await app.identities.link("test", "kim-phone", kim.id, at=app.clock.now())
    await app.start()
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", EMAIL)]))
    [approval] = await requests_of(app, await say(app, kim.id, "email the team"))
    page = await text_of(client, "/console/approvals")
    assert "Kim" in page and approval.summary in page
    for key, value in EMAIL.items():  # every argument, in full
        assert key in page and value in page
    fake_llm.script(Reply(content="Good news: your email to the team went out."))
    responses = [await client.post(f"/console/approvals/{approval.id}/decide",
                                   data={"csrf": csrf, "choice": "approve"}) for _ in range(2)]
    assert said(responses[0].url).startswith(f"Approved “{approval.summary}”: Email sent")
    assert "was already done" in said(responses[1].url)
    assert len(risky_tools.SENT) == 1
    assert risky_tools.SENT[0]["user"] == "kim" and risky_tools.SENT[0]["timezone"] == \
        "Europe/Paris"
    stored = await app.approvals.store.get(approval.id)
    assert stored.status is ApprovalStatus.EXECUTED and stored.decided_by == "console:owner"
    # Kim hears it at once, in a turn of her own (as after a press of her own button), not
    # with her next message.
    await asyncio.wait_for(app.gateway.wait_idle(), 60)
    assert sender.texts("kim-phone") == ["Good news: your email to the team went out."]
    told = fake_llm.requests[-1]
    assert any("Email sent to team@corp.example" in r for r in tool_results(told))
    assert f"The owner approved the waiting request “{approval.summary}” from the web " \
        "console" in json.dumps(told["messages"], ensure_ascii=False)
    # ...and it is not mixed into her next request: her history has it, before her message;
    # nothing joins after it.
    fake_llm.script(Reply(content="You're welcome."))
    await say(app, kim.id, "thanks")
    messages = fake_llm.requests[-1]["messages"]
    assert messages[-1]["role"] == "user" and person_said(messages[-1]["content"]) == "thanks"
    assert sum("Email sent" in (m.get("content") or "") for m in messages
               if m["role"] == "tool") == 1
    actions = await ConsoleLogins(app.db).recent_actions()
    assert actions[0].action == "approve" and approval.id in actions[0].target


async def test_cancel_in_the_console_runs_nothing(world, fake_llm):
    app, client, csrf = world
    owner = await app.ensure_owner()
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", EMAIL)]))
    [approval] = await requests_of(app, await say(app, owner.id, "email the team"))
    fake_llm.script(Reply(content="I've dropped that email."))
    response = await client.post(f"/console/approvals/{approval.id}/decide",
                                 data={"csrf": csrf, "choice": "cancel"})
    assert said(response.url) == f"Cancelled “{approval.summary}”."
    assert risky_tools.SENT == []
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.REJECTED
    assert "Nothing waits for anyone's approval." in await text_of(client, "/console/approvals")
    # The conversation hears it now: the owner's own request, cancelled by them.
    await asyncio.wait_for(_asked(fake_llm, 2), 10)
    told = fake_llm.requests[-1]
    assert tool_results(told)[-1] == "The owner cancelled this action: it was not run."
    assert "The user cancelled the waiting request" in json.dumps(told["messages"],
                                                                  ensure_ascii=False)


async def _asked(fake_llm, count: int) -> None:  # type: ignore[no-untyped-def]
    while len(fake_llm.requests) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def test_tasks_pause_resume_run_now_and_delete(world):
    from triggers.service import Owner

    app, client, csrf = world
    owner = await app.ensure_owner()
    task = await app.triggers.service.morning_summary(Owner(owner.id, "Europe/Paris"))
    page = await text_of(client, "/console/tasks")
    assert "Morning summary" in page and "(Europe/Paris)" in page and "07:30" in page
    for action, status in (("pause", "paused"), ("resume", "active")):
        await client.post(f"/console/tasks/{task.id}/{action}", data={"csrf": csrf})
        assert (await app.triggers.service.store.get(task.id)).status.value == status
    response = await client.post(f"/console/tasks/{task.id}/resume", data={"csrf": csrf})
    assert "not paused" in said(response.url)  # the task service's own words
    response = await client.post(f"/console/tasks/{task.id}/run", data={"csrf": csrf})
    assert said(response.url).startswith("Ran “Morning summary” now")
    assert "Recent runs" in await text_of(client, "/console/tasks")
    await client.post(f"/console/tasks/{task.id}/delete", data={"csrf": csrf})
    assert await app.triggers.service.store.get(task.id) is None


async def test_the_tasks_page_says_schedules_in_the_owners_language(world):
    """The page's own chrome is the operator's; the words it borrows from the persona (a
    schedule, when it runs next) are in the signed-in owner's language."""
    from triggers.service import Owner

    app, client, _ = world
    owner = await app.ensure_owner()
    await app.triggers.service.morning_summary(Owner(owner.id, "Europe/Paris"))
    assert "every day at 7:30" in await text_of(client, "/console/tasks")
    await app.users.set_language(owner.id, "de", app.clock.now())
    page = await text_of(client, "/console/tasks")
    assert "jeden Tag um 7:30" in page and "every day at 7:30" not in page


async def test_a_dead_letter_is_shown_with_its_reason_and_sent_again(world):
    app, client, csrf = world
    outbox = app.outbound.outbox
    now = app.clock.now()
    message = await outbox.enqueue(app.db, dedupe_key="x1", user_id="owner", channel="sms",
                                   address="+12125550123", text="Your table is booked.", at=now,
                                   lane=Lane.URGENT)
    await outbox.dead(message, "gave up after 6 attempts: Twilio answered HTTP 503")
    page = await text_of(client, "/console/outbox")
    assert "Your table is booked." in page and "Twilio answered HTTP 503" in page
    response = await client.post(f"/console/outbox/{message}/retry", data={"csrf": csrf})
    assert "queued again" in said(response.url)
    row = await outbox.get(message)
    assert row["status"] == "pending" and row["attempts"] == 0
    again = await client.post(f"/console/outbox/{message}/retry", data={"csrf": csrf})
    assert "no longer dead-lettered" in said(again.url)


async def test_a_dead_letter_to_an_address_that_said_stop_is_not_sent_again(world):
    app, client, csrf = world
    now = app.clock.now()
    await app.identities.link("sms", "+12125550123", "owner", at=now)
    await app.identities.set_opted_out("sms", "+12125550123", True, at=now)
    outbox = app.outbound.outbox
    message = await outbox.enqueue(app.db, dedupe_key="x2", user_id="owner", channel="sms",
                                   address="+12125550123", text="Hello", at=now, lane=Lane.URGENT)
    await outbox.dead(message, "opted out")
    response = await client.post(f"/console/outbox/{message}/retry", data={"csrf": csrf})
    assert "replied STOP" in said(response.url)
    assert (await outbox.get(message))["status"] == "dead"


async def test_people_block_unblock_and_the_owner_is_never_blocked(world):
    app, client, csrf = world
    kim = await app.users.ensure("kim", display_name="Kim", at=app.clock.now())
    await app.identities.link("telegram", "4343", kim.id, at=app.clock.now())
    page = await text_of(client, "/console/people")
    assert "Kim" in page and "telegram 4343" in page
    await client.post("/console/people/kim/block", data={"csrf": csrf})
    assert (await app.users.get("kim")).blocked
    await client.post("/console/people/kim/unblock", data={"csrf": csrf})
    assert not (await app.users.get("kim")).blocked
    response = await client.post("/console/people/owner/block", data={"csrf": csrf})
    assert said(response.url) == "The owner cannot be blocked."
    assert not (await app.users.get("owner")).blocked


async def test_a_pairing_request_is_approved_or_denied_from_the_console(world):
    app, client, csrf = world
    now = app.clock.now()
    first = await app.access.admit("telegram", "777", "Ana", "hello", now)
    second = await app.access.admit("telegram", "778", "Bob", "hi", now)
    page = await text_of(client, "/console/people")
    assert f"Code {first.pairing_code}: “Ana”" in page
    response = await client.post(f"/console/pairing/{first.pairing_code}/approve",
                                 data={"csrf": csrf})
    assert said(response.url).startswith(f"Approved {first.pairing_code}")
    ana = await app.identities.resolve("telegram", "777")
    assert ana is not None
    queued = [r["text"] for r in await app.outbound.outbox.list()]
    assert "You're in! I'm your assistant now: ask me anything." in queued
    await client.post(f"/console/pairing/{second.pairing_code}/deny", data={"csrf": csrf})
    assert await app.identities.resolve("telegram", "778") is None
    assert await app.access.list_pairings(now) == []


async def test_usage_by_person_and_day_with_the_sms_estimate(world, fake_llm):
    from channels.sms.store import SmsStore

    app, client, _ = world
    owner = await app.ensure_owner()
    fake_llm.script(Reply(content="Hello!", usage=(1200, 34)))
    await say(app, owner.id, "hi")
    now = app.clock.now()
    outbox_id = await app.outbound.outbox.enqueue(
        app.db, dedupe_key="s1", user_id=owner.id, channel="sms", address="+12125550123",
        text="x", at=now, lane=Lane.URGENT)
    await SmsStore(app.db).record(outbox_id, 1, "SM1", 3, "GSM-7", now)
    page = await text_of(client, f"/console/usage?month={now:%Y-%m}")
    assert "1,200" in page and "34" in page  # prompt and completion tokens
    assert "0.03 EUR" in page  # 3 segments at 0.01
    assert re.search(r'<svg class="chart"[^>]*role="img"', page)
    assert await text_of(client, "/console/usage?month=not-a-month")  # falls back to now


async def test_memory_facts_are_listed_and_forgotten(app_factory, tmp_path):
    app = await app_factory(console=ON, memory=MemorySettings())
    client = await console_client(app)
    try:
        csrf = await sign_in(client, app)
        fact = await app.services.memory.learn("owner", "Allergic to peanuts")
        assert "Allergic to peanuts" in await text_of(client, "/console/people")
        response = await client.post(f"/console/people/owner/facts/{fact.id}/forget",
                                     data={"csrf": csrf})
        assert said(response.url) == "Forgot “Allergic to peanuts”."
        assert await app.services.memory.store.open_facts("owner") == []
    finally:
        await client.close()


async def test_health_shows_every_part_and_the_last_errors(world):
    import logging

    _, client, _ = world
    logging.getLogger("bot.test").error("the widget broke at https://user:pw@example.com/x")
    page = await text_of(client, "/console/health")
    for part in ("channels", "LLM fake-model", "database (sqlite)", "Redis", "scheduler",
                 "outbox"):
        assert part in page
    assert "the widget broke" in page and "pw@" not in page
    assert "sign in" in page  # the console's own record of actions


async def test_the_overview_says_what_waits_and_what_runs_next(world, fake_llm):
    from triggers.service import Owner

    app, client, _ = world
    owner = await app.ensure_owner()
    fake_llm.script(Reply(tool_calls=[ToolCall("send_email", EMAIL)]))
    await say(app, owner.id, "email the team")
    await app.triggers.service.morning_summary(Owner(owner.id, "UTC"))
    page = await text_of(client, "/console")
    assert "send email" in page and "Morning summary" in page and "at 7:30" in page
