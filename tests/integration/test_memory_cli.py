"""`valet memory list|forget USER [FACT_ID]`: the owner sees and removes what Valet
remembers, without an LLM."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.app.database import open_database
from bot.cli.main import parser
from bot.cli.memory import run_memory
from bot.config import load_settings
from bot.contracts.clock import FakeClock
from bot.memory.facts import FactStore
from bot.people.identity import IdentityStore
from bot.people.users import UserStore

NOON = datetime(2026, 1, 5, 12, tzinfo=UTC)


async def _run(db_url: str, *argv: str) -> tuple[int, list[str]]:
    said: list[str] = []
    settings = load_settings(None, env={"VALET_DATABASE_URL": db_url})
    code = await run_memory(settings, parser().parse_args(["memory", *argv]), said.append,
                            FakeClock(NOON))
    return code, said


async def test_the_owner_lists_and_forgets_a_persons_facts(db_url):
    db = await open_database(db_url)
    clock = FakeClock(NOON)
    users = UserStore(db)
    await users.ensure("u_alice", display_name="Alice", timezone="UTC", is_owner=False,
                       at=clock.now())
    await IdentityStore(db, users).link("sms", "+15550001111", "u_alice", at=clock.now())
    store = FactStore(db, clock)
    porto = await store.add("u_alice", "Lives in Porto")
    await store.add("u_alice", "Daughter Mia is 7")
    await db.close()

    code, said = await _run(db_url, "list", "sms:+15550001111")
    assert code == 0
    assert [line.split("\t")[-1] for line in said] == ["Daughter Mia is 7", "Lives in Porto"]
    assert await _run(db_url, "forget", "u_alice", str(porto.id)) == \
        (0, [f"forgot {porto.id}: Lives in Porto"])
    assert (await _run(db_url, "forget", "u_alice", str(porto.id)))[0] == 1
    code, said = await _run(db_url, "forget", "u_alice")
    assert code == 1 and "--yes" in said[0]  # everything only when the owner is sure
    assert await _run(db_url, "forget", "u_alice", "--yes") == \
        (0, ["forgot 1 facts about u_alice"])
    assert await _run(db_url, "list", "u_alice") == (0, ["nothing remembered about u_alice"])
    code, said = await _run(db_url, "list", "u_alice", "--all")
    assert [line.split("\t")[3:] for line in said] == [
        ["Lives in Porto", "forgotten 2026-01-05 12:00"],
        ["Daughter Mia is 7", "forgotten 2026-01-05 12:00"]]
    assert await _run(db_url, "list", "nobody") == (1, ["no such user: nobody"])
