"""`log_format: json`: one object a line, the turn's id on the lines written during the turn,
the request's id on lines written while a request is handled, and no secret in any line."""

from __future__ import annotations

import io
import json
import logging

from bot.contracts.envelopes import Inbound
from bot.plumbing.logs import JsonFormatter, SecretValuesFilter, request_id
from bot.tools.registry import build_tool
from tests.fakes.fake_openai import Reply, ToolCall


def capture(env: dict[str, str] | None = None) -> tuple[io.StringIO, logging.Handler]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(SecretValuesFilter(env or {}))
    logging.getLogger().addHandler(handler)
    return out, handler


async def test_lines_written_during_a_turn_carry_its_id(app_factory, fake_llm):
    app = await app_factory()

    async def explode() -> str:
        """Always fails."""
        raise RuntimeError("the widget broke")

    app.registry.add(build_tool(explode))  # a failing tool logs a warning during the turn
    fake_llm.script(Reply(tool_calls=[ToolCall("explode", {})]),
                    Reply(content="That did not work."))
    out, handler = capture()
    logging.getLogger("bot.test").warning("before the turn")
    token = request_id.set("req-42")
    try:
        reply = await app.orchestrator.handle_message(await _inbound(app))
        logging.getLogger("bot.test").warning("after the turn")
    finally:
        request_id.reset(token)
        logging.getLogger().removeHandler(handler)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["message"] == "before the turn" and "turn_id" not in lines[0]
    during = lines[1:-1]
    assert during and all(line["turn_id"] == reply.turn_id for line in during)
    assert all("request_id" not in line for line in during)  # the turn is not the request
    assert lines[-1] == {**lines[-1], "message": "after the turn", "request_id": "req-42"}
    assert "turn_id" not in lines[-1]


async def _inbound(app):
    owner = await app.ensure_owner()
    return Inbound(user_id=owner.id, channel="console", address="local", text="try it",
                   received_at=app.clock.now(), turn_id="turn-1")


def test_no_secret_reaches_a_line():
    token = "123456789:AAHsecretpartofthetoken"
    out, handler = capture({"VALET_TELEGRAM_TOKEN": token, "VALET_METRICS_TOKEN": "m-secret-1",
                            "VALET_LOG_LEVEL": "INFOINFO"})
    try:
        log = logging.getLogger("bot.test")
        log.warning("calling https://api.telegram.org/bot%s/getMe", token)
        log.warning("the secret half alone: %s", token.split(":")[1])
        log.warning("scrape with m-secret-1; level INFOINFO is not a secret")
        try:
            raise RuntimeError(f"failed with {token}")
        except RuntimeError:
            log.exception("boom")
    finally:
        logging.getLogger().removeHandler(handler)
    text = out.getvalue()
    assert "AAHsecretpartofthetoken" not in text and "m-secret-1" not in text
    assert "INFOINFO" in text
    assert len(text.splitlines()) == 4  # the traceback stays inside its line's object
