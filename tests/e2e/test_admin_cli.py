"""`valet users ...` and `valet pair ...` on the database a running assistant uses."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.config.channel_sections import SmsSettings
from bot.config.policies import AccessSettings
from bot.contracts.clock import FakeClock
from tests.e2e.test_console_pipe import clean_env, run_valet
from tests.helpers import RecordingSender, incoming


async def test_pair_and_users_commands(app_factory, tmp_path, fake_llm):
    # The CLI runs on the real clock: so does this app, or the code would look expired.
    # A British stranger: Britain is a country Valet may text here (sms.allowed_countries).
    app = await app_factory(clock=FakeClock(datetime.now(UTC)), access=AccessSettings(),
                            sms=SmsSettings(allowed_countries=["GB"]))
    sms = RecordingSender("sms")
    app.add_channel(sms)
    await app.start()
    await app.gateway.receive(incoming("hello", channel="sms", address="+447700900123",
                                       name="Ann"))
    await app.gateway.wait_idle()
    code = (await app.access.list_pairings(app.clock.now()))[0].code
    env = clean_env(tmp_path)  # no LLM configured: admin commands must not need one

    rc, out, err = await run_valet(["pair", "list"], env)
    assert rc == 0, err
    assert code in out and "sms:+447700900123" in out and "Ann" in out
    rc, out, _ = await run_valet(["pair", "approve", "NOPE00"], env)
    assert rc == 1 and "no pending request" in out
    rc, out, _ = await run_valet(["pair", "approve", code.lower()], env)
    assert rc == 0 and f"approved {code}" in out
    # The welcome the CLI queued goes out through the running app's outbox (once this app's
    # frozen clock has caught up with the CLI's real one), before Ann is blocked below: the
    # meter sends a blocked person nothing (issue 44).
    app.clock.advance(seconds=120)
    await app.gateway.wait_idle()
    assert sms.texts("+447700900123")[-1].startswith("You're in!")

    rc, out, _ = await run_valet(["users", "list"], env)
    assert "owner" in out and "sms:+447700900123" in out and "Europe/London" in out
    rc, out, _ = await run_valet(["users", "show", "sms:+447700900123"], env)
    assert "name: Ann" in out and "blocked: False" in out
    rc, out, _ = await run_valet(["users", "block", "sms:+447700900123"], env)
    assert rc == 0 and "blocked" in out
    rc, out, _ = await run_valet(["users", "block", "owner"], env)
    assert rc == 1
    user = await app.identities.resolve("sms", "+447700900123")
    assert user is not None and user.blocked

