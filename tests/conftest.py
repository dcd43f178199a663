"""Shared fixtures: a fake OpenAI server the real client talks to, and apps built on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.llm import OpenAILLM
from tests.fakes.fake_openai import FakeOpenAI

pytest_plugins = ["tests.server_fixtures"]


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
async def llm(fake_llm: FakeOpenAI) -> AsyncIterator[OpenAILLM]:
    client = OpenAILLM(base_url=fake_llm.base_url, api_key="test", model="fake-model",
                       timeout=5.0)
    yield client
    await client.close()
