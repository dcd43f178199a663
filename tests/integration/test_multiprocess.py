"""Two gateway processes on one Postgres and one Redis: a user's turns never overlap and
every reply is sent once, in order. (Two App instances stand in for two processes: separate
connection pools, locks, queues and deliverers; only the database and Redis are shared.)"""

from __future__ import annotations

import asyncio

from bot.config.policies import AccessSettings, ChannelAccess
from bot.config.sections import GatewaySettings
from tests.fakes.fake_openai import Reply as LLMReply
from tests.helpers import RecordingSender, incoming, said


async def test_two_processes_serialise_a_user_through_redis(postgres_dsn, app_factory,
                                                            redis_url, fake_llm):
    access = AccessSettings(channels={"test": ChannelAccess(allow=["alice", "bob"])})
    apps, senders = [], []
    for _ in range(2):
        # mid_turn queue: one turn per message (with steer, a message that reaches the
        # process running the person's turn may join it: tests/integration/test_steering.py)
        app = await app_factory(database_url=postgres_dsn, redis_url=redis_url, access=access,
                                gateway=GatewaySettings(mid_turn="queue"))
        sender = RecordingSender("test")
        app.add_channel(sender)
        await app.start()
        apps.append(app)
        senders.append(sender)
    in_flight = {"alice": 0, "bob": 0}
    peak = {"alice": 0, "bob": 0}

    async def respond(req):
        text = said(req["messages"][-1]["content"])
        who = text.split("-")[0]
        in_flight[who] += 1
        peak[who] = max(peak[who], in_flight[who])
        await asyncio.sleep(0.02)
        in_flight[who] -= 1
        return LLMReply(content=f"re {text}")

    fake_llm.responder = respond
    # Alternate processes, as a load balancer would.
    for i in range(6):
        await apps[i % 2].gateway.receive(incoming(f"alice-{i}", address="alice"))
        await apps[(i + 1) % 2].gateway.receive(incoming(f"bob-{i}", address="bob"))
    await asyncio.gather(*(a.gateway.wait_idle() for a in apps))
    for _ in range(3):  # a reply queued by one process may wait on the other's delivery
        await asyncio.gather(*(a.gateway.wait_idle() for a in apps))
    assert peak == {"alice": 1, "bob": 1}
    sent = [t for s in senders for t in s.texts("alice")]
    assert sorted(sent) == [f"re alice-{i}" for i in range(6)]
    alice_turns = [said(r["messages"][-1]["content"]) for r in fake_llm.requests
                   if said(r["messages"][-1]["content"]).startswith("alice")]
    assert alice_turns == [f"alice-{i}" for i in range(6)]
    assert fake_llm.calls == 12
