"""An outage of the database or Redis in the log (bot.plumbing.outages): one WARNING line a minute
per dependency, without a traceback, saying how many it stood for; everything else untouched."""

from __future__ import annotations

import io
import logging

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from bot.db import DatabaseUnavailable
from bot.plumbing.logs import add_handler
from bot.plumbing.outages import (
    DATABASE,
    REDIS,
    OutageLog,
    OutageState,
    about,
    dependency_of,
    recovered,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def logged():
    """A logger whose lines go through the outage filter (on its own state and clock)."""
    clock, out = Clock(), io.StringIO()
    state = OutageState(clock=clock)
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(OutageLog(state))
    logger = logging.getLogger("test.outages")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    yield logger, out, clock, state
    logger.removeHandler(handler)


def failing(err: BaseException) -> BaseException:
    try:
        raise err
    except BaseException as caught:
        return caught


def test_a_request_failing_for_each_of_a_thousand_requests_is_one_warning(logged):
    logger, out, clock, _ = logged
    for n in range(1000):
        try:
            raise DatabaseUnavailable("the Postgres server cannot be reached: refused")
        except DatabaseUnavailable:
            logger.exception("webhook %d failed", n)
        clock.now += 0.02  # 1,000 requests in 20 s
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("WARNING test.outages: webhook 0 failed: DatabaseUnavailable: "
                               "the Postgres server cannot be reached")
    assert "Traceback" not in out.getvalue()


def test_one_line_a_minute_per_dependency_counting_what_it_stood_for(logged):
    logger, out, clock, _ = logged
    for _ in range(3):
        logger.warning("lost redis", exc_info=failing(RedisConnectionError("refused")))
        logger.error("no database", exc_info=failing(DatabaseUnavailable("away")))
        clock.now += 10
    clock.now += 31  # a minute after the first
    logger.warning("still no redis", extra=about(REDIS))
    lines = out.getvalue().splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [
        "lost redis", "no database", "still no redis [redis unreachable for 61s; 2 more line(s)"
        " like this in the last 60s not shown; said once a minute]"]
    assert all(line.startswith("WARNING") for line in lines)


def test_recovered_says_so_once_and_the_next_outage_is_told_at_once(logged, caplog):
    logger, out, clock, state = logged
    logger.warning("x", extra=about(DATABASE))
    caplog.set_level(logging.INFO, "bot.plumbing.outages")
    recovered(DATABASE, state=state)
    recovered(DATABASE, state=state)  # not down any more: nothing
    assert [r.getMessage() for r in caplog.records if r.name == "bot.plumbing.outages"] == [
        "database reachable again (it was unreachable for about 0s)"]
    clock.now += 1
    logger.warning("y", extra=about(DATABASE))
    assert len(out.getvalue().splitlines()) == 2


def test_other_errors_keep_their_level_and_traceback(logged):
    logger, out, _, _ = logged
    for _ in range(2):
        try:
            raise KeyError("a bug")
        except KeyError:
            logger.exception("boom")
    text = out.getvalue()
    assert text.count("ERROR test.outages: boom") == 2 and text.count("Traceback") == 2


def test_a_bug_raised_while_handling_an_outage_is_still_a_bug():
    try:
        try:
            raise RedisConnectionError("refused")
        except RedisConnectionError:
            raise TypeError("bug in the handler")  # noqa: B904 (the point of the test)
    except TypeError as err:
        assert dependency_of(err) is None
    wrapped = DatabaseUnavailable("away")
    wrapped.__cause__ = OSError("refused")
    assert dependency_of(RuntimeError("x")) is None and dependency_of(wrapped) == DATABASE


def test_every_handler_valet_adds_carries_the_filter_before_the_secrets_are_masked():
    handler = logging.StreamHandler(io.StringIO())
    root = logging.getLogger()
    level = root.level
    add_handler(handler, "INFO")
    try:
        assert isinstance(handler.filters[0], OutageLog)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
