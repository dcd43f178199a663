"""Infrastructure that fails while Valet runs loses nothing a channel was told is received."""

from __future__ import annotations

import pytest
import redis.asyncio as redis_asyncio

from bot.config.policies import AccessSettings, ChannelAccess
from bot.db import DatabaseUnavailable, connect
from bot.gateway.deps import ReceiveResult
from bot.gateway.locks import RedisUserLocks
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming
from tests.ports import free_port


async def test_a_message_accepted_while_redis_is_down_is_answered_after_restart(
        tmp_path, app_factory, fake_llm):
    url = f"sqlite:///{tmp_path}/valet.db"
    access = AccessSettings(channels={"test": ChannelAccess(allow=["alice"])})
    app = await app_factory(database_url=url, access=access)
    app.add_channel(RecordingSender("test"))
    broken = redis_asyncio.from_url(f"redis://127.0.0.1:{free_port()}/0")
    app.gateway.deps.locks = RedisUserLocks(broken)  # Redis went away after start-up
    await app.start()
    assert await app.gateway.receive(incoming("remind me at 5", address="alice")) \
        is ReceiveResult.ACCEPTED
    await app.gateway.wait_idle()  # the turn could not take the user's lock
    assert fake_llm.calls == 0
    assert await app.gateway.deps.inbox.count("received") == 1
    await app.close()
    await broken.aclose()

    fake_llm.script(LLMReply(content="I'll remind you at 5."))
    again = await app_factory(database_url=url, access=access)
    sender = RecordingSender("test")
    again.add_channel(sender)
    await again.start()
    await again.gateway.wait_idle()
    assert sender.texts("alice") == ["I'll remind you at 5."]


async def test_a_postgres_server_that_is_not_running_is_one_plain_error():
    url = f"postgresql://valet:hunter2@127.0.0.1:{free_port()}/valet"
    with pytest.raises(DatabaseUnavailable) as err:
        await connect(url)
    text = str(err.value)
    assert "\n" not in text and "hunter2" not in text
    assert text.startswith("cannot open the database postgresql://valet:***@127.0.0.1:")
    assert "check that the Postgres server is running" in text


async def test_a_wrong_postgres_password_is_one_plain_error(postgres_dsn):
    from urllib.parse import urlsplit

    parts = urlsplit(postgres_dsn)
    wrong = parts._replace(netloc=f"nobody-{parts.username}:hunter2@{parts.hostname}:"
                                  f"{parts.port}").geturl()
    with pytest.raises(DatabaseUnavailable) as err:
        await connect(wrong)
    assert "hunter2" not in str(err.value) and "\n" not in str(err.value)
