"""Approvals: what waits for anyone's OK, with every argument; Approve or Cancel through the
approvals package's own decision path (the same compare-and-set as a tap in the chat; an
approved action runs once, as its person), then the person's prompt message is edited and a
turn of theirs tells them at once what became of it (bot.approvals.behalf.telling_turn)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console, back
from bot.approvals.behalf import Behalf, BehalfOutcome, decide_on_behalf, telling_turn
from bot.contracts.approvals import ExecutionStatus
from bot.contracts.people import User
from bot.contracts.tool_context import ToolExecutionContext
from bot.people.console_login import ConsoleSession

PAGE = "/console/approvals"
RECENT = 10


def routes(console: Console) -> list[web.RouteDef]:
    app = console.app

    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        people = await console.people()
        waiting = []
        for user in people.values():
            pending = await app.approvals.list_pending_approvals(user.id)
            if pending:
                waiting.append((user, pending))
        recent = [a for a in await app.approvals.store.list(limit=RECENT + 20)
                  if a.status.value != "pending"][:RECENT]
        return console.page(request, session, "approvals.html", title="Approvals", waiting=waiting,
                            recent=recent, people=people)

    async def decide(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        approval = await app.approvals.store.get(request.match_info["id"])
        if approval is None:
            raise back(PAGE, "No such request.", failed=True)
        choice = str((await request.post()).get("choice", ""))
        if choice not in ("approve", "cancel"):
            raise back(PAGE, "Choose Approve or Cancel.", failed=True)
        done = await decide_on_behalf(
            app.approvals, app.users, approval, approve=choice == "approve",
            by=f"console:{session.user_id}", context_for=acting_as(console))
        await app.outbound.settle_prompts(approval.user_id)  # their card shows the outcome
        told = telling_turn(done, decided_by=session.user_id, where="from the web console")
        if told is not None:  # the person hears it now, not with their next message
            await app.gateway.submit(told)
        said, failed = outcome_line(done)
        await console.record(request, session, choice,
                             f"approval {approval.id} ({approval.summary})", said)
        raise back(PAGE, said, failed=failed)

    return [web.get(PAGE, owner_only(console, page)),
            web.post(PAGE + "/{id}/decide", owner_only(console, decide))]


def acting_as(console: Console) -> Callable[[User], ToolExecutionContext]:
    """The tool context of a person's approved action run from the console: theirs (their
    zone, their channel, the tools' services), as in their own turn."""
    app = console.app

    def context(user: User) -> ToolExecutionContext:
        return ToolExecutionContext(user_id=user.id, timezone=user.timezone, clock=app.clock,
                                    http=app.http, channel=user.preferred_channel or "",
                                    services=app.services)

    return context


def outcome_line(done: BehalfOutcome) -> tuple[str, bool]:
    """What the owner reads after deciding, and whether it is bad news."""
    summary = done.approval.summary
    if done.result is Behalf.ALREADY:
        return f"“{summary}” was already {done.said}: nothing changed.", True
    if done.result is Behalf.CANCELLED:
        return f"Cancelled “{summary}”.", False
    if done.result is Behalf.GONE:
        return f"Not run: {done.approval.user_id} no longer exists.", True
    ran = done.execution
    ok = ran is not None and ran.status is ExecutionStatus.EXECUTED
    return (f"Approved “{summary}”: {done.said}" if ok else
            f"Approved “{summary}”, but it did not complete: {done.said}"), not ok
