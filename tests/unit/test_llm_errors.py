"""The error handler table: a strategy per error class, not an if-chain."""

from __future__ import annotations

from bot.config.policies import ReactLoopConfig
from bot.llm.port import (
    LLMAuthError,
    LLMBadRequestError,
    LLMContextOverflowError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
    summarize_args,
)
from bot.llm.recovery import ERROR_HANDLERS, Escalate, GiveUp, Retry, handler_for

CFG = ReactLoopConfig(llm_max_retries=3, llm_retry_base_delay=1.0, llm_retry_max_delay=30.0)


def test_every_error_class_has_a_strategy():
    for cls in (LLMRateLimitError, LLMServerError, LLMTimeoutError, LLMAuthError,
                LLMContextOverflowError, LLMBadRequestError):
        assert cls in ERROR_HANDLERS


def test_rate_limit_backs_off_exponentially_and_honours_retry_after():
    handler = handler_for(LLMRateLimitError("slow down"))
    delays = [handler(LLMRateLimitError("x"), n, CFG) for n in (1, 2, 3, 4)]
    assert delays[:3] == [Retry(1.0), Retry(2.0), Retry(4.0)]
    assert delays[3] == GiveUp()
    assert handler(LLMRateLimitError("x", retry_after=12.5), 1, CFG) == Retry(12.5)
    assert handler(LLMRateLimitError("x", retry_after=0.1), 3, CFG) == Retry(4.0)
    assert handler(LLMRateLimitError("x", retry_after=999), 1, CFG) == Retry(30.0)


def test_timeout_retries_once_auth_raises_overflow_escalates():
    assert handler_for(LLMTimeoutError())(LLMTimeoutError(), 1, CFG) == Retry(0.0)
    assert handler_for(LLMTimeoutError())(LLMTimeoutError(), 2, CFG) == GiveUp()
    assert handler_for(LLMAuthError())(LLMAuthError(), 1, CFG) == GiveUp()
    assert handler_for(LLMContextOverflowError())(LLMContextOverflowError(), 1, CFG) == Escalate()


def test_args_summary_is_short_and_safe():
    assert summarize_args('{"a": "' + "x" * 500 + '", "n": 3}') == {"a": "x" * 80, "n": 3}
    assert summarize_args("{broken") == {"_raw": "{broken"}
