"""Two processes on one Postgres database: one leads the schedule, every run happens once, and
when the leader dies the other takes over within a minute.

(postgres_dsn comes before app_factory in each signature: the apps close before their
database is dropped.)"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import TriggerSettings
from bot.contracts.clock import FakeClock
from tests.helpers import RecordingSender
from triggers.service import Owner

# The test moves time itself and ticks the engines by hand: no heartbeat in the test's
# minutes. (Built without validation: a real deployment may not renew a lease this rarely.)
QUIET = TriggerSettings.model_construct(heartbeat_seconds=3600, lease_seconds=45)


async def two_processes(app_factory, postgres_dsn, clock):
    access = AccessSettings(channels={"test": ChannelAccess(policy="allowlist",
                                                            allow=["alice"])})
    apps, senders = [], []
    for _ in range(2):
        app = await app_factory(database_url=postgres_dsn, access=access, clock=clock,
                                triggers=QUIET)
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.start()
        apps.append(app)
        senders.append(sender)
    alice = (await apps[0].access.admit("test", "alice", "Alice", "hi", clock.now())).user
    return apps, senders, alice


async def minute(apps, clock, engines=None) -> None:
    clock.advance(60)
    await asyncio.gather(*(a.triggers.engine.tick() for a in (engines or apps)))
    await asyncio.gather(*(asyncio.wait_for(a.gateway.wait_idle(), 60) for a in apps))


async def test_two_engines_run_every_minute_once_and_a_new_leader_takes_over(
        postgres_dsn, app_factory):
    clock = FakeClock(datetime(2026, 1, 5, 9, 0, 30, tzinfo=UTC))
    apps, senders, alice = await two_processes(app_factory, postgres_dsn, clock)
    first, second = apps
    await first.triggers.service.schedule(
        Owner(alice.id, "UTC"), name="drink water", schedule="* * * * *",
        executor="reminder", action={"text": "drink water"})
    for _ in range(5):
        await minute(apps, clock)
    leaders = [a.triggers.engine.leading for a in apps]
    assert leaders.count(True) == 1
    _, follower = (first, second) if leaders[0] else (second, first)

    # The leader dies (no goodbye: its lease just stops being renewed).
    for _ in range(5):
        await minute(apps, clock, engines=[follower])
    assert follower.triggers.engine.leading  # took over once the 45 s lease ran out

    texts = senders[0].texts() + senders[1].texts()
    runs = await first.db.fetch("SELECT run_key, outcome FROM trigger_runs ORDER BY run_key")
    assert len(runs) == len({r["run_key"] for r in runs}) == 10  # 09:01 ... 09:10, once each
    sent = [r for r in runs if r["outcome"] == "sent"]
    # At most the minute in which the lease was still the dead leader's is late or missed;
    # nothing is ever sent twice.
    assert len(texts) == len(sent) >= 9
    assert set(texts) == {"⏰ Reminder: drink water"}


async def test_a_leader_that_stops_hands_over_at_once(postgres_dsn, app_factory):
    clock = FakeClock(datetime(2026, 1, 5, 9, 0, 30, tzinfo=UTC))
    apps, _, _ = await two_processes(app_factory, postgres_dsn, clock)
    engines = [a.triggers.engine for a in apps]
    leader = next(e for e in engines if e.leading)
    other = next(e for e in engines if e is not leader)
    await other.tick()
    assert not other.leading
    await leader.stop()
    await other.tick()
    assert other.leading
    clock.advance(timedelta(minutes=5).total_seconds())
    await leader.tick()  # back again: the lease is taken
    assert not leader.leading and other.leading
