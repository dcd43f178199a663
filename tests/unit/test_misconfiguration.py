"""A wrong key or an unknown model is told apart from a passing outage: waiting fixes neither,
so the user hears the assistant is misconfigured and the owner what to fix."""

from __future__ import annotations

import logging

import pytest

from bot.llm.openai_client import OpenAILLM
from bot.llm.port import (
    LLMAuthError,
    LLMBadRequestError,
    LLMModelNotFoundError,
    LLMServerError,
    is_misconfiguration,
    misconfiguration_hint,
)
from bot.llm.recovery import handler_for, raise_to_caller
from bot.text.redact import RedactingFilter, install_redaction, redact_text
from persona import load_persona
from tests.fakes.fake_openai import Fail

MESSAGES = [{"role": "user", "content": "hi"}]


async def test_an_unknown_model_is_a_misconfiguration_not_a_retry(fake_llm, llm):
    fake_llm.script(Fail(404))
    with pytest.raises(LLMModelNotFoundError) as err:
        await llm.complete(MESSAGES, None)
    assert isinstance(err.value, LLMBadRequestError)  # old handlers still catch it
    assert handler_for(err.value) is raise_to_caller
    assert is_misconfiguration(err.value)
    assert "VALET_LLM_MODEL" in misconfiguration_hint(err.value)


async def test_a_refused_key_is_a_misconfiguration(fake_llm, llm):
    fake_llm.script(Fail(401))
    with pytest.raises(LLMAuthError) as err:
        await llm.complete(MESSAGES, None)
    assert is_misconfiguration(err.value)
    assert "VALET_LLM_API_KEY" in misconfiguration_hint(err.value)


async def test_a_server_error_or_a_bad_parameter_is_not(fake_llm, llm):
    fake_llm.script(Fail(500), Fail(400, message="temperature must be at most 2"))
    for expected in (LLMServerError, LLMBadRequestError):
        with pytest.raises(expected) as err:
            await llm.complete(MESSAGES, None)
        assert type(err.value) is expected and not is_misconfiguration(err.value)


async def test_the_models_the_server_lists(fake_llm):
    llm = OpenAILLM(base_url=fake_llm.base_url, api_key="k", model="fake-model")
    try:
        assert await llm.list_models() == ["fake-model"]
    finally:
        await llm.close()


def test_every_persona_has_a_misconfigured_line():
    for name in ("default", "jeeves"):
        line = load_persona(name).lines.misconfigured
        assert "not set up correctly" in line and "minute" not in line


def test_url_credentials_are_masked_in_every_form():
    assert redact_text("POST http://user:pw@host:8/v1/chat") == "POST http://user:***@host:8/v1/chat"
    assert redact_text("redis://:pw@127.0.0.1:6379/0") == "redis://***@127.0.0.1:6379/0"
    assert redact_text("https://tok@api.example.com") == "https://***@api.example.com"
    assert redact_text("postgresql://u:p@ss@h/db?sslmode=require&password=x") == \
        "postgresql://u:***@h/db?sslmode=require&password=***"
    assert redact_text("mail bob@example.com about http://h/v1") == \
        "mail bob@example.com about http://h/v1"


def test_the_log_filter_masks_arguments_and_tracebacks_of_any_logger(caplog):
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    records: list[str] = []
    handler.emit = lambda record: records.append(handler.format(record))  # type: ignore[method-assign]
    logger = logging.getLogger("httpx.test_redaction")
    logger.addHandler(handler)
    try:
        logger.warning("HTTP Request: %s %s", "POST", "http://u:hunter2@h/v1/chat/completions")
        try:
            raise ConnectionError("cannot reach postgresql://valet:hunter2@db/valet")
        except ConnectionError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert records and all("hunter2" not in r for r in records)
    assert "http://u:***@h/v1/chat/completions" in records[0]
    assert "postgresql://valet:***@db/valet" in records[1]


def test_installing_twice_adds_one_filter():
    logger = logging.getLogger("valet.test.install")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        install_redaction(logger)
        install_redaction(logger)
        assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
    finally:
        logger.removeHandler(handler)
