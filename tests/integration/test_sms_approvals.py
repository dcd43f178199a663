"""Approvals by SMS reply: "1"/"2" for one request, codes or "1 yes 2 no" or free text for
several; each decided through the approvals package, each action run once."""

from __future__ import annotations

import re

import pytest

from bot.contracts.approvals import ApprovalStatus
from tests.fakes import risky_tools
from tests.fakes.fake_openai import Reply as LLMReply
from tests.fakes.fake_openai import ToolCall
from tests.integration.sms_harness import sms_world
from tests.integration.test_approvals import registry_file

EMAIL = {"to": "team@corp.example", "subject": "Q3", "body": "Numbers attached."}
FLIGHT = {"origin": "LHR", "destination": "JFK", "date": "2026-03-03"}
RESERVED = ("STOP", "START", "HELP", "YES", "NO", "UNSTOP", "CANCEL", "END", "QUIT",
            "STOPALL", "UNSUBSCRIBE", "INFO")


@pytest.fixture(autouse=True)
def _clean():
    risky_tools.SENT.clear()
    risky_tools.BOOKED.clear()


@pytest.fixture
async def world(app_factory, tmp_path):
    world, close = await sms_world(app_factory, agents=registry_file(tmp_path))
    yield world
    await close()


def asks_for_no_reserved_word_alone(prompt: str) -> bool:
    """The reply asked for is never a carrier keyword on its own ("Reply YES")."""
    for reply in re.findall(r"[Rr]eply (\S+)", prompt):
        if reply.strip('".,').upper() in RESERVED:
            return False
    return True


async def ask(world, fake_llm, *calls: ToolCall) -> str:
    fake_llm.script(LLMReply(tool_calls=list(calls)))
    await world.text("please take care of it")
    await world.idle()
    prompt = world.replies()[-1]
    assert asks_for_no_reserved_word_alone(prompt)
    return prompt


def code_of(prompt: str, position: int) -> str:
    match = re.search(rf"^{position}\) .* - code (\d{{4}})$", prompt, re.MULTILINE)
    assert match, prompt
    return match.group(1)


async def test_one_request_is_approved_by_replying_1_and_runs_once(world, fake_llm):
    prompt = await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    assert prompt == ("Before I go ahead, I need your OK:\nSend email (to: team@corp.example, "
                      "subject: Q3, body: Numbers attached.)? Reply 1 to send, 2 to cancel, or "
                      "tell me what to change.")
    assert risky_tools.SENT == []
    fake_llm.script(LLMReply(content="Sent to the team."))
    await world.text("1")
    await world.text("1")  # a second "1": nothing pending any more, nothing runs again
    await world.idle()
    assert [e["to"] for e in risky_tools.SENT] == ["team@corp.example"]
    assert world.replies()[1] == "Sent to the team."
    assert world.replies()[2].endswith("was already done.")


async def test_one_request_is_cancelled_by_replying_2(world, fake_llm):
    await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    fake_llm.script(LLMReply(content="Okay, not sent."))
    await world.text("2")
    await world.idle()
    assert risky_tools.SENT == [] and world.replies()[-1] == "Okay, not sent."
    [approval] = await world.app.approvals.store.list(None, None)
    assert approval.status is ApprovalStatus.REJECTED


async def test_yes_in_words_approves_one_request_too(world, fake_llm):
    await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    # "ok send it" is no answer of the table (a verb): a message like any other, even when
    # the LLM would say it approves (issue 43; no classifier reads replies any more).
    fake_llm.script(LLMReply(content='{"decisions": [{"number": 1, "decision": "approve"}]}'))
    await world.text("ok send it")
    await world.idle()
    assert risky_tools.SENT == []
    assert "Still waiting for your OK" in world.replies()[-1]
    fake_llm.script(LLMReply(content="Sent."))
    await world.text("ok")
    await world.idle()
    assert len(risky_tools.SENT) == 1


async def test_two_requests_are_decided_by_1_yes_2_no(world, fake_llm):
    prompt = await ask(world, fake_llm, ToolCall("send_email", EMAIL),
                       ToolCall("book_flight", FLIGHT))
    first, second = code_of(prompt, 1), code_of(prompt, 2)
    assert f'"{first} YES {second} NO"' in prompt
    fake_llm.script(LLMReply(content="Email sent; no flight booked."))
    await world.text("1 yes 2 no")
    await world.idle()
    assert len(risky_tools.SENT) == 1 and risky_tools.BOOKED == []
    assert world.replies()[-1] == "Email sent; no flight booked."


async def test_two_requests_named_in_free_text_decide_nothing(world, fake_llm):
    """Issue 43: "book the flight" names an action: no answer. The batch form decides."""
    await ask(world, fake_llm, ToolCall("send_email", EMAIL), ToolCall("book_flight", FLIGHT))
    fake_llm.script(LLMReply(content="Which would you like?"))
    await world.text("book the flight, cancel the email")
    await world.idle()
    assert risky_tools.SENT == [] and risky_tools.BOOKED == []
    fake_llm.script(LLMReply(content="Flight booked, email dropped."))
    await world.text("2 yes 1 no")
    await world.idle()
    assert risky_tools.SENT == [] and len(risky_tools.BOOKED) == 1


async def test_one_of_two_requests_is_approved_by_its_code(world, fake_llm):
    prompt = await ask(world, fake_llm, ToolCall("send_email", EMAIL),
                       ToolCall("book_flight", FLIGHT))
    fake_llm.script(LLMReply(content="Flight booked."))
    await world.text(f"YES {code_of(prompt, 2)}")
    await world.idle()
    assert risky_tools.SENT == [] and len(risky_tools.BOOKED) == 1
    pending = await world.app.approvals.list_pending_approvals(
        (await world.app.identities.resolve("sms", "+12125550123")).id)
    assert [a.tool_name for a in pending] == ["send_email"]


async def test_a_bare_1_with_two_requests_waiting_decides_nothing(world, fake_llm):
    await ask(world, fake_llm, ToolCall("send_email", EMAIL), ToolCall("book_flight", FLIGHT))
    fake_llm.script(LLMReply(content="Which one do you mean?"))
    await world.text("1")
    await world.idle()
    assert risky_tools.SENT == [] and risky_tools.BOOKED == []


async def test_an_expired_request_is_not_run_by_a_late_1(world, fake_llm):
    await ask(world, fake_llm, ToolCall("send_email", EMAIL))
    world.app.clock.advance(minutes=31)
    fake_llm.script(LLMReply(content="That one expired; ask again?"))
    await world.text("1")
    await world.idle()
    assert risky_tools.SENT == []
    [approval] = await world.app.approvals.store.list(None, None)
    assert approval.status is ApprovalStatus.EXPIRED
