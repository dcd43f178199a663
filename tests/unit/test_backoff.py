"""One backoff formula for the LLM port and the outbox: doubling from a base up to a cap,
never earlier than the server asked."""

from __future__ import annotations

from bot.llm.port import LLMRateLimitError, LLMServerError
from bot.llm.recovery import Retry, retry_with_backoff
from bot.plumbing.backoff import backoff_delay
from tests.helpers import loop_config


def test_delays_double_up_to_the_cap():
    assert [backoff_delay(n, base=2.0, cap=10.0) for n in (1, 2, 3, 4, 5)] == [
        2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_servers_retry_after_is_a_floor_bounded_by_the_cap():
    assert backoff_delay(1, base=1.0, cap=30.0, retry_after=12.5) == 12.5
    assert backoff_delay(1, base=1.0, cap=30.0, retry_after=999) == 30.0  # the LLM gives up
    # (The outbox waits a channel's retry_after exactly, past its cap and below its backoff:
    # tests/integration/test_gateway.py.)


def test_the_llm_error_table_uses_the_shared_formula():
    cfg = loop_config(llm_retry_base_delay=1.5, llm_retry_max_delay=5.0)
    assert retry_with_backoff(LLMServerError("x"), 3, cfg) == Retry(
        backoff_delay(3, base=1.5, cap=5.0))
    assert retry_with_backoff(LLMRateLimitError("x", retry_after=4.0), 1, cfg) == Retry(4.0)
