"""Every dialect end to end: a real `valet serve` answering Telegram (streaming on) and SMS,
a real `valet chat` in a pseudo-terminal (streaming), `valet doctor` and `valet onboard`,
against the fake OpenAI server speaking each dialect (tests/fakes/dialects.py) and as strict
about the messages it is sent as OpenAI is. "What is six times seven" with the calculator
offered: the calculator runs, the answer holds 42, and no markup or thinking reaches anyone."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import aiohttp
import pytest
import yaml

from persona.lines import DEFAULT
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.e2e.test_console_tty import PROMPT, expect, leave, llm_env, start_chat
from tests.e2e.test_sms_restart import ALICE, PUBLIC, start_server, text
from tests.fakes.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.fakes.fake_telegram import TOKEN, FakeTelegram
from tests.fakes.fake_twilio import FakeTwilio
from tests.integration.test_dialect_turns import DIALECTS, NEVER_SHOWN, six_times_seven

ANSWER = "Six times seven is 42."
OWNER = 42


def script_case(fake: FakeOpenAI, case: tuple[str, str]) -> str:
    """The fake speaks the case's dialect; returns the reply the person should read."""
    if case == ("empty", "once"):  # ollama #10899: nothing at first, asked again
        fake.dialect, fake.thinking = "openai", "field"
        fake.script(Reply(content=""), Reply(content=ANSWER))
        return ANSWER
    if case == ("empty", "twice"):
        fake.dialect, fake.thinking = "openai", "field"
        fake.script(Reply(content=""), Reply(content="\n"))
        return DEFAULT.no_answer
    fake.dialect, fake.thinking = case
    six_times_seven(fake)
    return ANSWER


CASES = [*DIALECTS, ("empty", "once"), ("empty", "twice")]


def assert_nothing_private(shown: list[str]) -> None:
    assert all(s.strip() for s in shown), f"an empty message was sent: {shown!r}"
    for marker in NEVER_SHOWN:
        leaked = [s for s in shown if marker in s]
        assert not leaked, f"{marker!r} reached a person: {leaked}"


async def test_every_dialect_by_telegram_streamed_and_by_sms(fake_llm, tmp_path):
    fake_llm.strict = True
    async with FakeTelegram() as tg, FakeTwilio() as twilio, \
            aiohttp.ClientSession() as http:
        env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                        VALET_LLM_MODEL="fake-model", VALET_TELEGRAM_TOKEN=TOKEN,
                        VALET_TELEGRAM_API_URL=tg.api_url, VALET_PUBLIC_URL=PUBLIC,
                        VALET_SMS_FROM_NUMBER="+15005550006",
                        VALET_TWILIO_ACCOUNT_SID=twilio.account_sid,
                        VALET_TWILIO_AUTH_TOKEN=twilio.auth_token,
                        VALET_TWILIO_API_URL=twilio.base_url)
        # One fake endpoint speaks every dialect in turn here, which a real one never does:
        # `tool_calls: text` says this endpoint writes calls as text (native ones are read
        # whatever it says), so `auto` does not settle on native after the first case.
        (tmp_path / "valet.yaml").write_text(
            "memory:\n  enabled: false\nloop:\n  stream: true\nllm:\n  tool_calls: text\n"
            f"owner:\n  telegram_ids: ['{OWNER}']\n"
            f"access:\n  channels:\n    sms: {{policy: allowlist, allow: ['{ALICE}']}}\n")
        server, url = await start_server(env)
        try:
            for n, case in enumerate(CASES):
                wanted = script_case(fake_llm, case)
                before = tg.texts(OWNER).count(wanted)
                tg.user_says(OWNER, "what is six times seven")
                await tg.wait_for(lambda w=wanted, b=before: tg.texts(OWNER).count(w) > b,
                                  timeout=60)
                wanted = script_case(fake_llm, case)
                assert await text(http, url, "what is six times seven", f"SM{n}",
                                  twilio.auth_token) == 200
                [*_, last] = await twilio.wait_for(n + 1, timeout=60)
                assert last.body == wanted, case
        finally:
            server.send_signal(signal.SIGTERM)
            await asyncio.wait_for(server.wait(), 30)
        shown = [t for m in tg.sent(OWNER) for t in (m.text, *m.edits)]
        assert_nothing_private(shown + [m.body for m in twilio.sent])
        assert fake_llm.refused == []  # every request OpenAI's rules would take
        # The calculator ran for each dialect, on each channel.
        results = [m for r in fake_llm.requests for m in r["messages"][-1:]
                   if m["role"] == "tool" and m["content"] == "6 * 7 = 42"]
        assert len(results) == 2 * len(DIALECTS)


async def test_every_dialect_at_the_terminal_streamed(fake_llm, tmp_path):
    fake_llm.strict = True
    env = llm_env(fake_llm, tmp_path)
    (tmp_path / "valet.yaml").write_text(  # as above
        "memory:\n  enabled: false\nllm:\n  tool_calls: text\n")
    child = start_chat(env)
    await expect(child, PROMPT)
    for case in CASES:
        wanted = script_case(fake_llm, case)
        child.send("what is six times seven\r")
        await expect(child, wanted)
        await expect(child, PROMPT)
    shown = await leave(child)
    assert_nothing_private([shown])
    assert fake_llm.refused == []


def answers_the_probe(reply: Reply) -> Any:
    """A server that answers `valet doctor`'s first request ("ready") and its probe."""
    return lambda body: reply if body.get("tools") else Reply(content="ready")


CALLS_MULTIPLY = Reply(tool_calls=[ToolCall("multiply", {"a": 6, "b": 7})],
                       reasoning="I multiply 6 by 7.")
DOCTOR = [  # (dialect, thinking, what the server does otherwise, what doctor says)
    ("openai", "field", None, "LLM endpoint: tool calls: native"),
    ("arguments_object", "field", None, "arguments sent as a JSON object instead of a string"),
    ("hermes", "field", None, "tool calls written as text in <tool_call> blocks"),
    ("qwen3_coder", "field", None, "tool calls written as <function=...> tags"),
    ("bare_json", "field", None, "tool calls written as bare JSON"),
    ("fenced_parameters", "field", None, "tool calls written as bare JSON"),
    ("mistral", "field", None, "tool calls written as text after [TOOL_CALLS]"),
    ("mistral_v11", "field", None, "tool calls written as text after [TOOL_CALLS]"),
    ("python_tag", "field", None, "tool calls written as text after <|python_tag|>"),
    ("hermes", "tags", None, "thinking written in <think> blocks"),
    ("openai", "unopened", None, "with no opening tag (the DeepSeek-R1 template)"),
    ("openai", "field", "refuses", "this model does not call tools; Valet will only chat "
                                   "(the server refuses requests with tools"),
    ("openai", "field", "answers", "this model does not call tools; Valet will only chat "
                                   "(it answered"),
    ("openai", "field", "empty", "it answered nothing at first and was asked again"),
    ("openai", "field", "small", "context length: 8192 tokens (meta.n_ctx), less than "
                                 "loop.context_token_limit (128000)"),
]


@pytest.mark.parametrize(("dialect", "thinking", "server", "said"), DOCTOR,
                         ids=[f"{d}-{t}-{s}" for d, t, s, _ in DOCTOR])
async def test_doctor_names_the_dialect(fake_llm, tmp_path, dialect, thinking, server, said):
    fake_llm.dialect, fake_llm.thinking = dialect, thinking
    fake_llm.responder = answers_the_probe(CALLS_MULTIPLY)
    if server == "refuses":
        fake_llm.refuse_tools = "ollama"
    elif server == "answers":
        fake_llm.responder = answers_the_probe(Reply(content="6 times 7 is 42."))
    elif server == "empty":
        fake_llm.script(Reply(content="ready"), Reply(content=""))
    elif server == "small":
        fake_llm.model_card = {"meta": {"n_ctx": 8192, "n_ctx_train": 131072}}
    env = clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                    VALET_LLM_MODEL="fake-model")
    code, out, err = await run_valet(["doctor"], env)
    assert code == 0, out + err
    assert said in out, out
    assert "streaming: yes" in out and "all good" in out


async def test_onboard_sets_a_model_that_does_not_call_tools_to_chat_only(fake_llm, tmp_path):
    fake_llm.responder = lambda body: Reply(content="6 times 7 is 42.")
    fake_llm.model_card = {"max_model_len": 16384}
    env = clean_env(tmp_path)
    env.pop("VALET_TOOL_EXPOSURE")
    code, out, err = await run_valet([
        "onboard", "--yes", "--llm-base-url", fake_llm.base_url, "--llm-model", "fake-model",
        "--no-telegram", "--no-sms", "--timezone", "Europe/Paris", "--owner-name", "Sam"], env)
    assert code == 0, out + err
    assert "note: this model does not call tools; Valet will only chat" in out
    assert "Valet will run without tools (loop.mode: simple)" in out
    assert "loop.context_token_limit set to 16384, as the server reports" in out
    config = yaml.safe_load((tmp_path / "valet.yaml").read_text())
    assert config["loop"] == {"mode": "simple", "context_token_limit": 16384}
    # The doctor run that ends onboarding sees it so.
    assert "ok    LLM endpoint: this model does not call tools; Valet will only chat " \
           "(loop.mode: simple)" in out
