"""`valet outbox list [--dead] [--user]` and `valet outbox retry ID`: an operator sees what
is queued and what was given up on (with the reason), and puts a dead message back; the
running deliverer then sends it."""

from __future__ import annotations

import argparse

from bot.cli.outbox import run_outbox
from bot.contracts.clock import SystemClock
from tests.helpers import RecordingSender


async def outbox(settings, *words: str) -> tuple[int, list[str]]:
    from bot.cli.main import parser

    args = parser().parse_args(["outbox", *words])
    assert isinstance(args, argparse.Namespace)
    lines: list[str] = []
    code = await run_outbox(settings, args, lines.append)
    return code, "\n".join(lines).splitlines()


async def test_a_dead_letter_is_listed_with_its_reason_and_retried(app_factory, app_settings):
    app = await app_factory(clock=SystemClock())  # the CLI queues it for now, real time
    owner = await app.ensure_owner()
    await app.outbound.notify_user(owner, "Your parcel is here.", dedupe_key="parcel")
    await app.outbound.deliverer.deliver_due()  # no console sender here: dead at once
    settings = app_settings()

    code, lines = await outbox(settings, "list", "--dead")
    assert code == 0
    header, row = lines
    assert header.split()[:5] == ["ID", "STATUS", "TO", "USER", "TRIES"]
    assert row.split()[1:4] == ["dead", "console:local", "owner"]
    assert "Your parcel is here." in row and "no sender for channel 'console'" in row
    message_id = int(row.split()[0])

    assert (await outbox(settings, "list", "--user", "telegram:999"))[1] == [
        "no such user: telegram:999"]
    assert len((await outbox(settings, "list", "--user", "owner"))[1]) == 2

    code, lines = await outbox(settings, "retry", str(message_id))
    assert code == 0
    assert lines == [f"queued {message_id} again for console:local; the running valet serve "
                     "sends it"]
    code, lines = await outbox(settings, "retry", str(message_id))
    assert code == 1 and lines == [f"message {message_id} is pending, not dead: nothing to "
                                   "retry"]
    assert (await outbox(settings, "list", "--dead"))[1] == ["no dead messages"]

    console = RecordingSender("console")
    app.add_channel(console)
    await app.outbound.deliverer.deliver_due()
    assert console.texts() == ["Your parcel is here."]  # sent now, once
    assert (await outbox(settings, "retry", "9999"))[1] == [
        "no message 9999 (see `valet outbox list`)"]
