"""Every request carries its cap, in the field the server reads; extra_body refuses
credentials by what they are; a request the server calls invalid is repaired once."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, load_settings
from bot.config.llm_sections import secret_key
from bot.llm.caps import OutputCaps, background_work, default_field, field_instead
from bot.llm.openai_client import OpenAILLM
from bot.llm.port import LLMInvalidRequestError
from bot.llm.probe import PROBE_CAP, learn_cap_field
from bot.llm.recovery import call_with_recovery
from bot.llm.repair import repaired
from tests.fakes.fake_llamacpp import FakeLlamaCpp, Said
from tests.fakes.fake_openai import Fail, Reply
from tests.helpers import loop_config

OPENAI_REFUSAL = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                  "Use 'max_completion_tokens' instead.")


def test_the_cap_field_is_openais_for_openai_and_max_tokens_elsewhere():
    assert default_field(None) == "max_completion_tokens"
    assert default_field("https://api.openai.com/v1") == "max_completion_tokens"
    assert default_field("http://localhost:8080/v1") == "max_tokens"
    assert field_instead(OPENAI_REFUSAL, "max_tokens") == "max_completion_tokens"
    assert field_instead("Unrecognized request argument supplied: max_completion_tokens",
                         "max_completion_tokens") == "n_predict"
    assert field_instead("max_tokens is too large: 100000", "max_tokens") is None


async def test_answers_and_background_work_carry_their_own_caps(fake_llm):
    llm = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m",
                    caps=OutputCaps(answer=700, background=99))
    try:
        fake_llm.script(Reply(content="a"), Reply(content="b"))
        await llm.complete([{"role": "user", "content": "hi"}], None)
        with background_work():
            await llm.complete([{"role": "user", "content": "extract"}], None)
    finally:
        await llm.close()
    assert [r["max_tokens"] for r in fake_llm.requests] == [700, 99]


async def test_a_refused_cap_field_is_replaced_by_the_one_the_server_names_for_good(fake_llm):
    llm = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m",
                    caps=OutputCaps(), cap_field="max_tokens")
    try:
        fake_llm.script(Fail(400, message=OPENAI_REFUSAL, code="unsupported_parameter"),
                        Reply(content="ok"), Reply(content="again"))
        assert (await llm.complete([{"role": "user", "content": "hi"}], None)).content == "ok"
        await llm.complete([{"role": "user", "content": "hi"}], None)
    finally:
        await llm.close()
    first, second, third = fake_llm.requests
    assert "max_tokens" in first and "max_tokens" not in second
    assert second["max_completion_tokens"] == third["max_completion_tokens"] == 1024


async def test_a_cap_in_extra_body_is_the_operators_word(fake_llm):
    llm = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m", caps=OutputCaps(),
                    extra_body={"max_tokens": 200})
    try:
        fake_llm.script(Reply(content="ok"))
        await llm.complete([{"role": "user", "content": "hi"}], None)
    finally:
        await llm.close()
    assert fake_llm.requests[0]["max_tokens"] == 200


async def test_the_probe_learns_the_field_a_server_cuts_answers_at():
    # The fake llama.cpp reads n_predict and max_tokens, and ignores max_completion_tokens.
    async with FakeLlamaCpp() as server:
        server.model = lambda body: Said("one two three ", stops=False)
        llm = OpenAILLM(base_url=server.base_url, api_key="k", model="smollm2",
                        caps=OutputCaps(), cap_field="max_completion_tokens")
        try:
            assert await learn_cap_field(llm) == "max_tokens"
        finally:
            await llm.close()
    assert llm.cap_field == "max_tokens" and llm.caps == OutputCaps()
    ignored, cut = server.answers
    assert ignored["finish_reason"] == "length" and ignored["predicted_n"] > PROBE_CAP
    assert cut["finish_reason"] == "length" and cut["predicted_n"] == PROBE_CAP


@pytest.mark.parametrize("key", ["max_tokens", "max_completion_tokens", "n_predict",
                                 "num_ctx", "top_k", "cache_prompt", "tokens_per_second"])
def test_extra_body_takes_keys_that_count_or_tune(key):
    assert not secret_key(key)


@pytest.mark.parametrize("key", ["api_key", "apiKey", "x-api-key", "Authorization", "token",
                                 "access_token", "password", "client_secret", "cookie"])
def test_extra_body_refuses_keys_named_for_a_credential(key):
    assert secret_key(key)


def _problem(tmp_path, body: str) -> str:
    path = tmp_path / "valet.yaml"
    path.write_text(f"llm:\n  extra_body:\n{body}")
    with pytest.raises(ConfigError) as err:
        load_settings(str(path), env={})
    return str(err.value)


def test_extra_body_with_max_tokens_loads_and_a_bearer_value_does_not(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("llm:\n  extra_body:\n    max_tokens: 200\n")
    assert load_settings(str(path), env={}).llm.extra_body == {"max_tokens": 200}
    said = _problem(tmp_path, "    headers_note: Bearer abcdefghijklmnop\n")
    assert "headers_note looks like a secret" in said
    said = _problem(tmp_path, "    stop: [sk-abcdefghijklmnopqrstuv]\n")
    assert "stop.0 looks like a secret" in said


def test_a_repair_sends_unreadable_arguments_as_an_empty_object():
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "a", "type": "function",
                    "function": {"name": "x", "arguments": "to make it look like"}},
                   {"id": "b", "type": "function",
                    "function": {"name": "y", "arguments": '{"q": 1}'}}]}]
    fixed = repaired(history)
    assert fixed is not None
    assert [c["function"]["arguments"] for c in fixed[1]["tool_calls"]] == ["{}", '{"q": 1}']
    assert history[1]["tool_calls"][0]["function"]["arguments"] == "to make it look like"
    assert repaired(fixed) is None  # nothing left to mend


class _NoSleep:
    async def sleep(self, seconds: float) -> None:
        raise AssertionError("an invalid request is never retried after a wait")


async def test_an_invalid_request_is_sent_repaired_once_then_given_up(fake_llm):
    refusal = "Failed to parse tool call arguments as JSON: parse error"
    fake_llm.script(Fail(500, message=refusal), Fail(500, message=refusal))
    view = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "x", "arguments": "no"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "Error: no tool"}]
    llm = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m")
    try:
        with pytest.raises(LLMInvalidRequestError):
            await call_with_recovery(llm, lambda level: view, None, loop_config(), _NoSleep(),
                                     max_recovery_level=0)
    finally:
        await llm.close()
    first, second = fake_llm.requests  # not four
    assert first["messages"][1]["tool_calls"][0]["function"]["arguments"] == "no"
    assert second["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_an_invalid_request_with_nothing_to_repair_is_not_sent_again(fake_llm):
    fake_llm.script(Fail(400, message="Invalid value for 'temperature'"))
    llm = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="m")
    try:
        with pytest.raises(Exception, match="temperature"):
            await call_with_recovery(llm, lambda level: [{"role": "user", "content": "hi"}],
                                     None, loop_config(), _NoSleep(), max_recovery_level=0)
    finally:
        await llm.close()
    assert fake_llm.calls == 1
