"""The outbound limiter on a hand-moved clock: per-chat and per-bot rates, bursts, and a 429
that stops everything for exactly its retry_after."""

from __future__ import annotations

import asyncio

from channels.telegram.limiter import Limits, OutboundLimiter


class ManualTime:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def limiter(limits: Limits) -> tuple[OutboundLimiter, ManualTime]:
    time = ManualTime()
    return OutboundLimiter(limits, now=time.monotonic, sleep=time.sleep), time


async def sent_times(lim: OutboundLimiter, time: ManualTime, chats: list[str]) -> list[float]:
    times = []
    for chat in chats:
        await lim.acquire(chat)
        times.append(round(time.now, 2))
    return times


async def test_one_chat_gets_its_burst_then_one_message_a_second():
    lim, time = limiter(Limits(per_chat_rate=1, per_chat_burst=3, per_bot_rate=1000))
    assert await sent_times(lim, time, ["a"] * 6) == [0, 0, 0, 1, 2, 3]


async def test_the_whole_bot_stays_under_thirty_a_second_across_chats():
    lim, time = limiter(Limits())
    times = await sent_times(lim, time, [f"chat{i}" for i in range(90)])
    assert times[-1] == round(89 / 29, 2)
    for start in range(len(times) - 30):
        assert times[start + 30] - times[start] >= 1 - 0.011  # never 31 within a second


async def test_a_429_pauses_every_send_for_exactly_retry_after():
    lim, time = limiter(Limits())
    await lim.acquire("a")
    lim.pause(7)
    assert await sent_times(lim, time, ["b"]) == [7]


async def test_chats_do_not_wait_for_each_other():
    lim, time = limiter(Limits(per_chat_rate=1, per_chat_burst=1, per_bot_rate=1000))
    assert await sent_times(lim, time, ["a", "b", "c", "a"]) == [0, 0, 0, 1]


async def test_button_answers_and_typing_wait_only_for_a_429_not_for_messages():
    lim, time = limiter(Limits(per_chat_rate=1, per_chat_burst=1))
    await sent_times(lim, time, ["a"] * 3)  # the bucket is empty now
    before = time.now
    await lim.acquire("a", counted=False)
    assert time.now == before
    lim.pause(2)
    await lim.acquire(None, counted=False)
    assert time.now == before + 2


async def test_the_deliverer_can_ask_when_a_chat_may_go_without_taking_anything():
    lim, time = limiter(Limits(per_chat_rate=1, per_chat_burst=3, per_bot_rate=1000))
    assert lim.ready_in("a") == 0 and lim.available("a") == 3  # a chat never seen
    await sent_times(lim, time, ["a"] * 3)
    assert round(lim.ready_in("a"), 2) == 1.0 and lim.available("a") == 0
    assert lim.ready_in("b") == 0  # another chat is not held by a's pace
    time.now += 2.5
    assert lim.ready_in("a") == 0 and lim.available("a") == 2
    assert lim.available("a") == 2  # asking takes nothing
    lim.pause(7)  # a 429 holds every chat
    assert round(lim.ready_in("a"), 6) == 7 and round(lim.ready_in("b"), 6) == 7
