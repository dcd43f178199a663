"""Tests for the fake OpenAI server, driven through the real openai.AsyncOpenAI client."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from tests.fakes.fake_openai import ContextOverflow, Fail, FakeOpenAI, Hang, Reply, ToolCall

MSGS: list[Any] = [{"role": "user", "content": "What time is it in UTC, please?"}]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def client(fake: FakeOpenAI) -> AsyncIterator[AsyncOpenAI]:
    c = AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
    yield c
    await c.close()


async def test_plain_reply(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    assert fake.base_url.startswith("http://127.0.0.1:") and fake.base_url.endswith("/v1")
    fake.script(Reply(content="hi there"))
    r = await client.chat.completions.create(model="gpt-test", messages=MSGS)
    assert r.object == "chat.completion" and r.model == "gpt-test"
    msg = r.choices[0].message
    assert msg.role == "assistant" and msg.content == "hi there" and not msg.tool_calls
    assert r.choices[0].finish_reason == "stop"
    assert r.usage is not None
    assert r.usage.prompt_tokens == len(MSGS[0]["content"]) // 4
    assert r.usage.completion_tokens == len("hi there") // 4 + 1


async def test_explicit_usage_and_delay(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(Reply(content="x", usage=(100, 7), delay=0.2))
    t0 = time.monotonic()
    r = await client.chat.completions.create(model="m", messages=MSGS)
    assert time.monotonic() - t0 >= 0.2
    assert r.usage is not None and (r.usage.prompt_tokens, r.usage.total_tokens) == (100, 107)


async def test_tool_calls_dict_and_raw_args(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(
        Reply(
            tool_calls=[
                ToolCall("get_time", {"timezone": "UTC"}),
                ToolCall("calc", '{"expr": "1+"}', id="x"),
            ]
        )
    )
    r = await client.chat.completions.create(model="m", messages=MSGS)
    assert r.choices[0].finish_reason == "tool_calls"
    calls = r.choices[0].message.tool_calls or []
    assert [(c.id, c.type) for c in calls] == [("call_1", "function"), ("x", "function")]
    f0, f1 = (c.function for c in calls)  # type: ignore[union-attr]
    assert f0.name == "get_time" and json.loads(f0.arguments) == {"timezone": "UTC"}
    assert f1.name == "calc" and f1.arguments == '{"expr": "1+"}'  # verbatim, invalid JSON


async def test_rate_limit_with_retry_after(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(Fail(429, retry_after=0.5))
    with pytest.raises(openai.RateLimitError) as ei:
        await client.chat.completions.create(model="m", messages=MSGS)
    assert ei.value.status_code == 429
    assert ei.value.response.headers["retry-after"] == "0.5"
    assert ei.value.code == "rate_limit_exceeded"


async def test_rate_limit_is_retried_by_client(fake: FakeOpenAI) -> None:
    fake.script(Fail(429, retry_after=0.1), Reply(content="ok"))
    async with AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=1) as c:
        r = await c.chat.completions.create(model="m", messages=MSGS)
    assert r.choices[0].message.content == "ok" and fake.calls == 2


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (500, openai.InternalServerError),
        (401, openai.AuthenticationError),
        (400, openai.BadRequestError),
    ],
)
async def test_fail_statuses(
    fake: FakeOpenAI, client: AsyncOpenAI, status: int, exc: type[Exception]
) -> None:
    fake.script(Fail(status))
    with pytest.raises(exc):
        await client.chat.completions.create(model="m", messages=MSGS)


async def test_fail_custom_message_and_code(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(Fail(400, message="bad tool schema", code="invalid_schema"))
    with pytest.raises(openai.BadRequestError) as ei:
        await client.chat.completions.create(model="m", messages=MSGS)
    assert (
        ei.value.code == "invalid_schema"
        and ei.value.message == "Error code: 400 - bad tool schema"
    )
    assert ei.value.body == {
        "message": "bad tool schema",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_schema",
    }


async def test_context_overflow(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(ContextOverflow())
    with pytest.raises(openai.BadRequestError) as ei:
        await client.chat.completions.create(model="m", messages=MSGS)
    assert ei.value.code == "context_length_exceeded"
    assert "This model's maximum context length is 8192 tokens" in ei.value.message


async def test_hang_triggers_client_timeout_and_shuts_down_fast() -> None:
    t0 = time.monotonic()
    async with FakeOpenAI() as fake:
        fake.script(Hang(30.0))
        async with AsyncOpenAI(
            base_url=fake.base_url, api_key="test", max_retries=0, timeout=0.3
        ) as c:
            with pytest.raises(openai.APITimeoutError):
                await c.chat.completions.create(model="m", messages=MSGS)
    assert time.monotonic() - t0 < 3.0  # exiting did not wait for the 30s hang


async def test_shutdown_while_request_in_flight() -> None:
    async with FakeOpenAI() as fake:
        arrived = asyncio.Event()

        def responder(_body: dict[str, Any]) -> Hang:
            arrived.set()
            return Hang(30.0)

        fake.responder = responder
        c = AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
        task = asyncio.create_task(c.chat.completions.create(model="m", messages=MSGS))
        await asyncio.wait_for(arrived.wait(), 3.0)
    with pytest.raises(openai.APIError):  # 500 from the woken Hang, or a connection error
        await asyncio.wait_for(task, 3.0)
    await c.close()


async def test_streaming_content(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    fake.script(Reply(content=text))
    stream = await client.chat.completions.create(
        model="m", messages=MSGS, stream=True, stream_options={"include_usage": True}
    )
    chunks = [c async for c in stream]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) > 3 and "".join(pieces) == text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len(text) // 4 + 1


async def test_streaming_without_usage(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(Reply(content="a b"))
    chunks = [
        c async for c in await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    ]
    assert all(c.choices and c.usage is None for c in chunks)


async def test_streaming_tool_calls(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(
        Reply(
            content="Let me check.",
            tool_calls=[
                ToolCall("get_time", {"timezone": "UTC"}),
                ToolCall("calc", '{"expr": "1+"}'),
            ],
        )
    )
    stream = await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    calls: dict[int, dict[str, str]] = {}
    arg_pieces: dict[int, int] = {}
    finish = None
    async for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for d in choice.delta.tool_calls or []:
            acc = calls.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
            acc["id"] += d.id or ""
            if d.function is not None:
                acc["name"] += d.function.name or ""
                acc["arguments"] += d.function.arguments or ""
                arg_pieces[d.index] = arg_pieces.get(d.index, 0) + bool(d.function.arguments)
    assert finish == "tool_calls"
    assert calls[0] == {"id": "call_1", "name": "get_time", "arguments": '{"timezone": "UTC"}'}
    assert calls[1] == {"id": "call_2", "name": "calc", "arguments": '{"expr": "1+"}'}
    assert arg_pieces == {0: 2, 1: 2}


async def test_streaming_failure_before_stream(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(Fail(429, retry_after=2), ContextOverflow())
    with pytest.raises(openai.RateLimitError) as ei:
        await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    assert ei.value.response.headers["retry-after"] == "2"
    with pytest.raises(openai.BadRequestError) as ei2:
        await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    assert ei2.value.code == "context_length_exceeded"


async def test_requests_recorded_and_reset(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.script(Fail(500), Reply(content="ok"))
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="m1", messages=MSGS)
    await client.chat.completions.create(model="m2", messages=MSGS, temperature=0.5)
    assert fake.calls == 2
    assert [r["model"] for r in fake.requests] == ["m1", "m2"]
    assert fake.requests[1]["messages"] == MSGS and fake.requests[1]["temperature"] == 0.5
    fake.script(Reply(content="unused"))
    fake.reset()
    assert (fake.calls, fake.requests) == (0, [])
    with pytest.raises(openai.InternalServerError):  # script was cleared too
        await client.chat.completions.create(model="m", messages=MSGS)


async def test_exhausted_script_is_500(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as ei:
        await client.chat.completions.create(model="m", messages=MSGS)
    assert "fake_openai: script exhausted" in ei.value.message
    assert fake.calls == 1 and len(fake.requests) == 1


async def test_responder_used_when_script_empty(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    def responder(body: dict[str, Any]) -> Reply | Fail:
        return Reply(content=f"echo {body['messages'][-1]['content']}")

    fake.script(Reply(content="scripted first"))
    fake.responder = responder
    r1 = await client.chat.completions.create(model="m", messages=MSGS)
    r2 = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "yo"}]
    )
    assert r1.choices[0].message.content == "scripted first"
    assert r2.choices[0].message.content == "echo yo"


async def test_concurrent_requests(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    n = 5
    fake.script(*(Reply(content=str(i), delay=0.3) for i in range(n)))
    t0 = time.monotonic()
    results = await asyncio.gather(
        *(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"q{i}"}]
            )
            for i in range(n)
        )
    )
    assert time.monotonic() - t0 < 0.3 * n  # served in parallel
    answers = [int(r.choices[0].message.content or "-1") for r in results]
    assert sorted(answers) == list(range(n))
    for i, a in enumerate(answers):  # script item k went to the k-th recorded request
        assert fake.requests[a]["messages"][0]["content"] == f"q{i}"


async def test_models_endpoint(client: AsyncOpenAI) -> None:
    models = [m async for m in client.models.list()]
    assert [(m.id, m.owned_by) for m in models] == [("fake-model", "fake")]


# --- dialects: the fake writes calls and thinking as a server without a parser does ---------

CALC = ToolCall("calculate", {"expression": "6*7"})


@pytest.mark.parametrize(("dialect", "written"), [
    ("hermes", '<tool_call>\n{"name": "calculate", "arguments": {"expression": "6*7"}}\n'
               "</tool_call>"),
    ("bare_json", '{"name": "calculate", "arguments": {"expression": "6*7"}}'),
    ("fenced_parameters", '```json\n{"name": "calculate", "parameters": {"expression": '
                          '"6*7"}}\n```'),
    ("mistral", '[TOOL_CALLS] [{"name": "calculate", "arguments": {"expression": "6*7"}}]'),
    ("mistral_v11", '[TOOL_CALLS]calculate{"expression": "6*7"}'),
    ("python_tag", '<|python_tag|>{"name": "calculate", "parameters": {"expression": "6*7"}}'),
    ("qwen3_coder", "<tool_call>\n<function=calculate>\n<parameter=expression>\n6*7\n"
                    "</parameter>\n</function>\n</tool_call>"),
])
async def test_a_dialect_writes_the_call_into_the_content(
        fake: FakeOpenAI, client: AsyncOpenAI, dialect: str, written: str) -> None:
    fake.dialect = dialect
    fake.script(Reply(tool_calls=[CALC]))
    r = await client.chat.completions.create(model="m", messages=MSGS)
    assert r.choices[0].message.content == written and not r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "stop"


async def test_arguments_as_an_object_and_thinking_in_tags(fake: FakeOpenAI,
                                                           client: AsyncOpenAI) -> None:
    fake.dialect, fake.thinking = "arguments_object", "tags"
    fake.script(Reply(content="Working.", tool_calls=[CALC], reasoning="6*7, so calculate."))
    r = await client.chat.completions.create(model="m", messages=MSGS)
    msg = r.choices[0].message
    assert msg.content == "<think>\n6*7, so calculate.\n</think>\n\nWorking."
    assert msg.tool_calls[0].function.arguments == {"expression": "6*7"}  # type: ignore[comparison-overlap,union-attr]
    fake.thinking = "unopened"
    fake.script(Reply(content="42.", reasoning="Easy."))
    r = await client.chat.completions.create(model="m", messages=MSGS)
    assert r.choices[0].message.content == "Easy.\n</think>\n\n42."


async def test_a_recorded_message_is_streamed_in_pieces_as_sent(fake: FakeOpenAI,
                                                               client: AsyncOpenAI) -> None:
    fake.script(Reply(message={"content": "<think>x</think>Hi"}, chunk_size=3))
    stream = await client.chat.completions.create(model="m", messages=MSGS, stream=True)
    pieces = [c.choices[0].delta.content async for c in stream
              if c.choices and c.choices[0].delta.content]
    assert pieces == ["<th", "ink", ">x<", "/th", "ink", ">Hi"]


@pytest.mark.parametrize(("server", "status", "words"), [
    ("ollama", 400, "does not support tools"), ("vllm", 400, "--enable-auto-tool-choice"),
    ("llama.cpp", 500, "tools param requires --jinja flag")])
async def test_a_server_refuses_tools_as_it_does(fake: FakeOpenAI, client: AsyncOpenAI,
                                                 server: str, status: int, words: str) -> None:
    fake.refuse_tools = server
    tools: Any = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    with pytest.raises(openai.APIStatusError) as refused:
        await client.chat.completions.create(model="m", messages=MSGS, tools=tools)
    assert refused.value.status_code == status and words in str(refused.value)
    fake.script(Reply(content="fine"))
    r = await client.chat.completions.create(model="m", messages=MSGS)  # without tools
    assert r.choices[0].message.content == "fine"


async def test_strict_refuses_a_call_without_its_result(fake: FakeOpenAI,
                                                        client: AsyncOpenAI) -> None:
    fake.strict = True
    call: Any = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="m", messages=[*MSGS, call, *MSGS])
    assert "must be followed by tool messages responding to each 'tool_call_id'" \
        in str(refused.value)
    fake.script(Reply(content="ok"))
    answered: Any = {"role": "tool", "tool_call_id": "c1", "content": "done"}
    r = await client.chat.completions.create(model="m", messages=[*MSGS, call, answered])
    assert r.choices[0].message.content == "ok" and len(fake.refused) == 1
