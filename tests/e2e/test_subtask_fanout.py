"""Issue 34 item 4 against a real `valet serve` (SMS through the fake Twilio, the fake LLM): a
paired person (not the owner, 20 requests a minute) sends one message whose turn makes 50
`delegate` calls: three sub-tasks run, the LLM requests of that turn stay within the person's
limit, and the reply says what was not done."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.e2e.test_console_pipe import clean_env
from tests.e2e.test_sms_restart import ALICE, PUBLIC, start_server, text
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.fake_twilio import FakeTwilio

HELPER = "You are a helper doing one sub-task"


def is_subtask(body: dict[str, Any]) -> bool:
    return str(body["messages"][0]["content"]).startswith(HELPER)


def results(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def fifty_parts(body: dict[str, Any]) -> Reply:
    """The person's turn asks for 50 sub-tasks; each works out a sum, then answers."""
    if is_subtask(body):
        if not results(body):
            return Reply(tool_calls=[ToolCall("calculate", {"expression": "6*7"})])
        return Reply(content="42")
    if results(body):
        return Reply(content="All parts handled.")
    return Reply(tool_calls=[ToolCall("delegate", {"task": f"part {i}: 6*7",
                                                   "tools": ["calculate"]})
                             for i in range(50)])


async def test_fifty_delegate_calls_in_one_message_run_three_within_the_limit(fake_llm,
                                                                             tmp_path):
    async with FakeTwilio() as twilio, aiohttp.ClientSession() as http:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url, VALET_LLM_MODEL="m",
                        VALET_PUBLIC_URL=PUBLIC, VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url)
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\nrate_limit_per_minute: 20\n"
            f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n")
        fake_llm.responder = fifty_parts
        serve, url = await start_server(env)
        try:
            assert await text(http, url, "work out 6*7 fifty times, one part each", "SM1",
                              twilio.auth_token) == 200
            [reply] = await twilio.wait_for(1, timeout=60)
        finally:
            serve.terminate()
            await serve.wait()
    subtasks = [b for b in fake_llm.requests if is_subtask(b)]
    assert len(subtasks) == 3 * 2  # three sub-tasks, two requests each
    said = results(fake_llm.requests[-1])
    assert sum(r.startswith("Sub-task finished") for r in said) == 3
    assert sum(r.startswith("Not run: at most 3 sub-tasks") for r in said) == 47
    assert len(fake_llm.requests) <= 20  # the whole turn, within the person's limit
    assert reply.body.startswith("All parts handled.")
    assert "(I did 3 of the 50 parts of that at once" in reply.body
