"""`valet doctor` tells the truth about the LLM, as the real servers showed it
(../shared/data/real_llamacpp, replayed by the fake server): why tools do not reach the model,
a probe that is capped, an answer of chat-template tokens is a wrong chat template (not "all
good"), and nothing of a raw log line or an error's class name in its output."""

from __future__ import annotations

import re

from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.fakes.fake_openai import Hang, Reply
from tests.fakes.recordings import recorded_message, recording

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\S* +(?:DEBUG|INFO|WARNING|ERROR)\b",
                      re.M)
CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]+(?:Error|Exception)\b")
TEMPLATE_TOKENS = recording("template_tokens_shown_doctor_all_good")


def _env(tmp_path, fake_llm, **extra):
    return clean_env(tmp_path, VALET_LLM_BASE_URL=fake_llm.base_url,
                     VALET_LLM_MODEL="fake-model", **extra)


async def test_template_tokens_in_the_answer_are_a_wrong_chat_template(fake_llm, tmp_path):
    """gemma-3-270m base served with llama.cpp's ChatML fallback: 'ready<|im_end|>...'."""
    assert TEMPLATE_TOKENS is not None
    message, finish = recorded_message(TEMPLATE_TOKENS, 13)
    fake_llm.script(Reply(message=message, finish_reason=finish))
    code, out, err = await run_valet(["doctor"], _env(tmp_path, fake_llm))
    assert code == 1, out + err
    assert "all good" not in out and "answered (" not in out
    assert "answers with chat-template tokens ('<|im_end|>'): wrong chat template" in out
    # The probe is capped (llm.background_max_tokens), and not probed further.
    assert fake_llm.requests[0]["max_tokens"] == 384
    assert len(fake_llm.requests) == 1


async def test_a_model_that_does_not_stop_is_said_so(fake_llm, tmp_path):
    fake_llm.script(Reply(content="ready, and then some more words", finish_reason="length"))
    fake_llm.responder = lambda body: Reply(content="6 times 7 is 42.")
    env = _env(tmp_path, fake_llm)
    (tmp_path / "valet.yaml").write_text("memory:\n  enabled: false\n"
                                         "llm:\n  background_max_tokens: 40\n")
    code, out, err = await run_valet(["doctor"], env)
    assert code == 0, out + err  # worth knowing, nothing broken
    assert "did not stop within 40 tokens (llm.background_max_tokens)" in out, out
    assert all(r["max_tokens"] == 40 for r in fake_llm.requests)


async def test_tools_the_server_drops_are_said_with_the_reason(fake_llm, tmp_path):
    """llama.cpp with the model's own template: /props says supports_tools: false and the
    model answers without ever seeing the tool."""
    fake_llm.props = {"chat_template_caps": {"supports_tools": False,
                                             "supports_tool_calls": False}}
    fake_llm.responder = lambda body: Reply(content="6 times 7 is 42.") if body.get("tools") \
        else Reply(content="ready")
    code, out, err = await run_valet(["doctor"], _env(tmp_path, fake_llm))
    assert "this model does not call tools; Valet will only chat (the server drops the tools " \
           "before the model sees them: its /props says supports_tools: false" in out, out + err
    assert code == 0 and "all good" in out


async def test_a_server_that_refuses_tools_shows_no_log_line(fake_llm, tmp_path):
    """tools_refused_handled.json: llama.cpp without --jinja answers 500; the doctor's output
    carried the port's WARNING line."""
    fake_llm.refuse_tools = "llama.cpp"
    fake_llm.responder = lambda body: Reply(content="ready")
    code, out, err = await run_valet(["doctor"], _env(tmp_path, fake_llm))
    assert code == 0 and "the server refuses requests with tools" in out
    assert not LOG_LINE.search(out + err), out + err
    assert "refuses requests with tools" in (tmp_path / "valet.log").read_text()


async def test_a_timeout_is_said_in_words(fake_llm, tmp_path):
    fake_llm.script(Hang(30))
    env = _env(tmp_path, fake_llm)
    (tmp_path / "valet.yaml").write_text("memory:\n  enabled: false\n"
                                         "llm:\n  timeout_seconds: 0.5\n")
    code, out, err = await run_valet(["doctor"], env)
    assert code == 1
    assert "did not answer: no answer within llm.timeout_seconds (0.5 s)" in out, out
    assert not CLASS_NAME.search(out + err), out + err


async def test_a_server_that_names_the_cap_otherwise_is_asked_so(fake_llm, tmp_path):
    """OpenAI's reasoning models refuse max_tokens (400 unsupported_parameter)."""
    from tests.fakes.fake_openai import Fail

    def server(body):  # type: ignore[no-untyped-def]
        if "max_tokens" in body:
            return Fail(400, message="Unsupported parameter: 'max_tokens' is not supported "
                        "with this model. Use 'max_completion_tokens' instead.",
                        code="unsupported_parameter")
        return Reply(content="6 times 7 is 42.") if body.get("tools") else \
            Reply(content="ready")

    fake_llm.responder = server
    code, out, err = await run_valet(["doctor"], _env(tmp_path, fake_llm))
    assert code == 0 and "answered ('ready')" in out, out + err
    answered = [r for r in fake_llm.requests if "max_tokens" not in r]
    assert answered and all(r["max_completion_tokens"] == 384 for r in answered)
    assert any(r.get("tools") for r in answered)  # the probe too


async def test_the_answer_is_quoted_as_a_person_would_see_it(fake_llm, tmp_path):
    """Read raw for template tokens, quoted read: a model's thinking is not its answer."""
    fake_llm.script(Reply(message={"content": "<think>One word, then.</think>ready"}))
    fake_llm.responder = lambda body: Reply(content="6 times 7 is 42.")
    code, out, err = await run_valet(["doctor"], _env(tmp_path, fake_llm))
    assert code == 0, out + err
    assert "answered ('ready')" in out and "One word" not in out, out
