"""People: who Valet serves, their linked channels, block and unblock (never the owner), the
language Valet writes to each;
strangers waiting to be let in (approve: they are told; deny); what Valet remembers of each
person, with forget (through the memory service, as /forget does)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bot.app.console.auth import owner_only
from bot.app.console.deps import Console, back
from bot.people.console_login import ConsoleSession
from persona.catalog import LANGUAGES, OWN_NAMES
from persona.speaking import speaking_to

PAGE = "/console/people"
FACTS = 50


def routes(console: Console) -> list[web.RouteDef]:
    app = console.app
    memory = app.services.memory

    async def page(request: web.Request, session: ConsoleSession) -> web.Response:
        now = console.now()
        people: list[tuple[Any, list[Any], list[Any]]] = []
        for user in (await console.people()).values():
            facts = await memory.store.open_facts(user.id, FACTS) if memory else []
            people.append((user, await app.identities.of_user(user.id), facts))
        return console.page(request, session, "people.html", title="People", people=people,
                            pairings=await app.access.list_pairings(now),
                            memory_on=memory is not None,
                            languages=[(code, OWN_NAMES[code]) for code in LANGUAGES],
                            default_language=app.persona.language)

    async def language(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        user = await app.users.get(request.match_info["user"])
        if user is None:
            raise back(PAGE, "No such person.", failed=True)
        chosen = str((await request.post()).get("language", ""))
        if chosen not in ("", *LANGUAGES):
            raise back(PAGE, f"Unknown language {chosen!r}.", failed=True)
        await app.users.set_language(user.id, chosen or None, console.now())
        said = f"{await app.identities.name_of(user)} reads " + \
            (f"{OWN_NAMES[chosen]} now." if chosen else "the default language now.")
        await console.record(request, session, "language", f"user {user.id}", said)
        raise back(PAGE, said)

    async def block(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        action = request.match_info["action"]
        user = await app.users.get(request.match_info["user"])
        if user is None:
            raise back(PAGE, "No such person.", failed=True)
        if user.is_owner and action == "block":
            said = "The owner cannot be blocked."
            await console.record(request, session, action, f"user {user.id}", said)
            raise back(PAGE, said, failed=True)
        await app.users.set_blocked(user.id, action == "block")
        said = f"{await app.identities.name_of(user)} is {action}ed."
        await console.record(request, session, action, f"user {user.id}", said)
        raise back(PAGE, said)

    async def pairing(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        code, action = request.match_info["code"].upper(), request.match_info["action"]
        now = console.now()
        if action == "deny":
            said = f"Denied {code}." if await app.access.deny(code, now) else \
                f"No pending request {code}."
        else:
            user = await app.access.approve(code, now)
            if user is not None:
                with speaking_to(user.language):  # as `/pair approve` says it
                    welcome = app.persona.lines.pairing_welcome
                await app.outbound.notify_user(user, welcome, dedupe_key=f"paired:{code}")
            said = f"Approved {code}: {await app.identities.name_of(user)} can talk to Valet " \
                "now." if user else f"No pending request {code} (it may have expired)."
        for owner in [u for u in await app.users.list() if u.is_owner]:
            await app.outbound.settle_prompts(owner.id)  # the pairing card says what happened
        await console.record(request, session, f"pairing {action}", f"code {code}", said)
        raise back(PAGE, said, failed=said.startswith("No pending"))

    async def forget(request: web.Request, session: ConsoleSession) -> web.StreamResponse:
        user_id, fact_id = request.match_info["user"], int(request.match_info["fact"])
        if memory is None:
            raise back(PAGE, "Memory is off.", failed=True)
        forgotten = await memory.forget(user_id, ids=[fact_id])
        said = f"Forgot “{forgotten[0].text}”." if forgotten else "Nothing to forget there."
        await console.record(request, session, "forget", f"fact {fact_id} of {user_id}", said)
        raise back(PAGE, said, failed=not forgotten)

    return [web.get(PAGE, owner_only(console, page)),
            web.post(PAGE + "/{user}/{action:block|unblock}", owner_only(console, block)),
            web.post(PAGE + "/{user}/language", owner_only(console, language)),
            web.post(PAGE + "/{user}/facts/{fact:[0-9]+}/forget", owner_only(console, forget)),
            web.post("/console/pairing/{code}/{action:approve|deny}",
                     owner_only(console, pairing))]
