"""The Database port and the stores on it, run against both SQLite and Postgres."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.db import Database, connect
from bot.db.migrate import DIALECT_TYPES, apply_migrations, migration_files
from bot.db.postgres import PostgresDatabase, rowcount, split_url
from bot.memory.history import HistoryStore
from bot.people.users import UserStore

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
ALL_MIGRATIONS = [name for _, name, _ in migration_files()]


async def make_items(db: Database) -> None:
    autoid = DIALECT_TYPES[db.dialect]["autoid"]
    await db.execute(f"CREATE TABLE items (id {autoid}, name TEXT NOT NULL UNIQUE,"
                     " flag INTEGER NOT NULL DEFAULT 0, at TIMESTAMPTZ)")


# --- migrations -------------------------------------------------------------------------------


async def test_migrations_apply_once_and_are_idempotent(db_url: str) -> None:
    first = await connect(db_url, migrate=False)
    try:
        assert await apply_migrations(first) == ALL_MIGRATIONS
        assert await apply_migrations(first) == []
    finally:
        await first.close()
    second = await connect(db_url)  # connect migrates again: nothing left to do
    try:
        assert await apply_migrations(second) == []
        rows = await second.fetch("SELECT version, name, applied_at FROM schema_migrations"
                                  " ORDER BY version")
        assert [r["name"] for r in rows] == ALL_MIGRATIONS
        assert [r["version"] for r in rows] == [v for v, _, _ in migration_files()]
        for row in rows:
            assert row["applied_at"].utcoffset() == timedelta(0)
    finally:
        await second.close()


async def test_concurrent_migrations_do_not_fail(db_url: str) -> None:
    dbs = [await connect(db_url, migrate=False) for _ in range(2)]
    try:
        results = await asyncio.gather(*(apply_migrations(d) for d in dbs))
        assert sorted(results[0] + results[1]) == sorted(ALL_MIGRATIONS)  # each applied once
        assert await dbs[0].fetchval("SELECT COUNT(*) FROM schema_migrations") == len(
            ALL_MIGRATIONS)
    finally:
        for d in dbs:
            await d.close()


# --- queries ----------------------------------------------------------------------------------


async def test_insert_on_conflict_do_nothing(db: Database) -> None:
    await make_items(db)
    sql = "INSERT INTO items (name) VALUES ($1) ON CONFLICT (name) DO NOTHING"
    assert await db.execute(sql, "a") == 1
    assert await db.execute(sql, "a") == 0
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 1


async def test_insert_returning(db: Database) -> None:
    await make_items(db)
    first = await db.fetchval("INSERT INTO items (name) VALUES ($1) RETURNING id", "a")
    row = await db.fetchrow("INSERT INTO items (name) VALUES ($1) RETURNING id, name", "b")
    assert isinstance(first, int)
    assert row == {"id": first + 1, "name": "b"}
    # Through execute, RETURNING still reports the rows it wrote.
    assert await db.execute("INSERT INTO items (name) VALUES ($1) RETURNING id", "c") == 1
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 3


async def test_fetch_fetchrow_fetchval(db: Database) -> None:
    await make_items(db)
    for name in ("a", "b", "c"):
        await db.execute("INSERT INTO items (name) VALUES ($1)", name)
    rows = await db.fetch("SELECT name, flag FROM items ORDER BY name")
    assert rows == [{"name": "a", "flag": 0}, {"name": "b", "flag": 0}, {"name": "c", "flag": 0}]
    assert all(type(r) is dict for r in rows)
    assert await db.fetch("SELECT name FROM items WHERE name = $1", "zz") == []
    assert await db.fetchrow("SELECT name FROM items WHERE name = $1", "b") == {"name": "b"}
    assert await db.fetchrow("SELECT name FROM items WHERE name = $1", "zz") is None
    assert await db.fetchval("SELECT name FROM items WHERE name = $1", "c") == "c"
    assert await db.fetchval("SELECT name FROM items WHERE name = $1", "zz") is None
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 3


async def test_execute_row_counts(db: Database) -> None:
    await make_items(db)
    for name in ("a", "b", "c"):
        assert await db.execute("INSERT INTO items (name) VALUES ($1)", name) == 1
    assert await db.execute("UPDATE items SET flag = $1", 1) == 3
    assert await db.execute("UPDATE items SET flag = $1 WHERE name = $2", 0, "zz") == 0
    assert await db.execute("DELETE FROM items WHERE name IN ($1, $2)", "a", "b") == 2
    assert await db.execute("SELECT * FROM items") == 0


async def test_integer_flags_take_bools_and_ints(db: Database) -> None:
    await make_items(db)
    await db.execute("INSERT INTO items (name, flag) VALUES ($1, $2)", "t", True)
    await db.execute("INSERT INTO items (name, flag) VALUES ($1, $2)", "f", 0)
    assert await db.fetchval("SELECT flag FROM items WHERE name = $1", "t") == 1
    assert await db.fetchval("SELECT name FROM items WHERE flag = $1", False) == "f"
    assert await db.fetchval("SELECT name FROM items WHERE flag = 1") == "t"


async def test_timestamps_round_trip_as_aware_utc(db: Database) -> None:
    await make_items(db)
    local = datetime(2024, 3, 10, 1, 30, 15, 123456, tzinfo=ZoneInfo("America/New_York"))
    await db.execute("INSERT INTO items (name, at) VALUES ($1, $2)", "a", local)
    back = await db.fetchval("SELECT at FROM items WHERE name = $1", "a")
    assert isinstance(back, datetime)
    assert back.utcoffset() == timedelta(0)
    assert back == local
    assert back.replace(tzinfo=None) == datetime(2024, 3, 10, 6, 30, 15, 123456)
    # Comparisons in SQL work on the instant, whatever zone the parameter came in.
    later = await db.fetchval("SELECT COUNT(*) FROM items WHERE at < $1",
                              local.astimezone(ZoneInfo("Asia/Tokyo")) + timedelta(seconds=1))
    assert later == 1


async def test_naive_datetime_is_refused(db: Database) -> None:
    await make_items(db)
    with pytest.raises(Exception, match="naive datetime"):
        await db.execute("INSERT INTO items (name, at) VALUES ($1, $2)", "a",
                         datetime(2024, 1, 1, 12, 0))
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 0


# --- transactions -----------------------------------------------------------------------------


async def test_transaction_commits(db: Database) -> None:
    await make_items(db)
    async with db.transaction() as tx:
        assert await tx.execute("INSERT INTO items (name) VALUES ($1)", "a") == 1
        await tx.execute("INSERT INTO items (name) VALUES ($1)", "b")
        assert await tx.fetchval("SELECT COUNT(*) FROM items") == 2
        assert await tx.fetchrow("SELECT name FROM items WHERE name = $1", "b") == {"name": "b"}
        assert len(await tx.fetch("SELECT name FROM items")) == 2
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 2


async def test_transaction_rolls_back_on_exception(db: Database) -> None:
    await make_items(db)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO items (name) VALUES ($1)", "a")
            await tx.execute("INSERT INTO items (name) VALUES ($1)", "b")
            raise Boom
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 0
    # A failing statement rolls back the statements before it, too.
    with pytest.raises(Exception):  # noqa: B017 - each driver raises its own IntegrityError
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO items (name) VALUES ($1)", "c")
            await tx.execute("INSERT INTO items (name) VALUES ($1)", "c")
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 0
    # And the database is still usable afterwards.
    assert await db.execute("INSERT INTO items (name) VALUES ($1)", "d") == 1


async def test_concurrent_atomic_increments(db: Database) -> None:
    await db.execute("CREATE TABLE counters (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    await db.execute("INSERT INTO counters (id, n) VALUES ($1, 0)", "c")

    async def bump() -> None:
        async with db.transaction() as tx:
            await tx.execute("UPDATE counters SET n = n + 1 WHERE id = $1", "c")

    await asyncio.gather(*(bump() for _ in range(50)))
    assert await db.fetchval("SELECT n FROM counters WHERE id = $1", "c") == 50


async def test_concurrent_read_modify_write_transactions(db: Database) -> None:
    await db.execute("CREATE TABLE counters (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    await db.execute("INSERT INTO counters (id, n) VALUES ($1, 0)", "c")
    # SQLite serialises whole transactions; Postgres needs the row lock.
    lock = " FOR UPDATE" if db.dialect == "postgres" else ""

    async def bump() -> None:
        async with db.transaction() as tx:
            n = await tx.fetchval(f"SELECT n FROM counters WHERE id = $1{lock}", "c")
            await asyncio.sleep(0)  # let the others run in between
            await tx.execute("UPDATE counters SET n = $1 WHERE id = $2", n + 1, "c")

    await asyncio.gather(*(bump() for _ in range(50)))
    assert await db.fetchval("SELECT n FROM counters WHERE id = $1", "c") == 50


async def test_concurrent_plain_statements(db: Database) -> None:
    await make_items(db)
    counts = await asyncio.gather(*(
        db.execute("INSERT INTO items (name) VALUES ($1)", f"n{i}") for i in range(50)))
    assert counts == [1] * 50
    assert await db.fetchval("SELECT COUNT(*) FROM items") == 50


# --- stores -----------------------------------------------------------------------------------


TURN = [
    {"role": "user", "content": "what's the weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": "call_1"},
    {"role": "assistant", "content": "18°C and clear — un temps magnifique."},
]


async def test_history_round_trip(db: Database) -> None:
    await UserStore(db).ensure("u1", at=T0)
    history = HistoryStore(db)
    assert await history.load("u1") == []
    await history.append("u1", "turn-1", TURN, channel="console", at=T0)
    assert await history.load("u1") == TURN
    assert await history.count("u1") == 4
    assert await history.count("nobody") == 0
    row = await db.fetchrow("SELECT turn_id, channel, created_at FROM messages"
                            " WHERE role = $1", "tool")
    assert row == {"turn_id": "turn-1", "channel": "console", "created_at": T0}


async def test_history_load_limit_keeps_most_recent(db: Database) -> None:
    await UserStore(db).ensure("u1", at=T0)
    await UserStore(db).ensure("u2", at=T0)
    history = HistoryStore(db, load_limit=5)
    for i in range(4):
        await history.append("u1", f"t{i}", [{"role": "user", "content": f"q{i}"},
                                             {"role": "assistant", "content": f"a{i}"}],
                             channel="console", at=T0 + timedelta(minutes=i))
    await history.append("u2", "x", [{"role": "user", "content": "other"}],
                         channel="console", at=T0)
    assert [m["content"] for m in await history.load("u1", limit=3)] == ["a2", "q3", "a3"]
    assert [m["content"] for m in await history.load("u1")] == ["a1", "q2", "a2", "q3", "a3"]
    assert await history.load("u2") == [{"role": "user", "content": "other"}]


async def test_history_append_is_all_or_nothing(db: Database) -> None:
    await UserStore(db).ensure("u1", at=T0)
    history = HistoryStore(db)
    with pytest.raises(KeyError):
        await history.append("u1", "t", [{"role": "user", "content": "hi"}, {"content": "?"}],
                             channel="console", at=T0)
    assert await history.count("u1") == 0
    await history.append("u1", "t", [], channel="console", at=T0)
    assert await history.count("u1") == 0


async def test_users(db: Database) -> None:
    users = UserStore(db)
    assert await users.get("alice") is None
    alice = await users.ensure("alice", display_name="Alice", timezone="Europe/Paris",
                               is_owner=True, at=T0)
    assert (alice.id, alice.display_name, alice.timezone) == ("alice", "Alice", "Europe/Paris")
    assert alice.is_owner is True and alice.blocked is False
    assert alice.preferred_channel is None and alice.quiet_hours_start is None
    # A second ensure leaves the existing user as it is.
    again = await users.ensure("alice", display_name="Someone else", at=T0 + timedelta(hours=1))
    assert again == alice
    bob = await users.ensure("bob", at=T0 + timedelta(minutes=1))
    assert (bob.display_name, bob.timezone, bob.is_owner) == ("", "UTC", False)
    assert [u.id for u in await users.list()] == ["alice", "bob"]

    assert await users.set_blocked("bob", True) is True
    blocked = await users.get("bob")
    assert blocked is not None and blocked.blocked is True
    assert await users.set_blocked("bob", False) is True
    unblocked = await users.get("bob")
    assert unblocked is not None and unblocked.blocked is False
    assert await users.set_blocked("nobody", True) is False

    await users.set_timezone("bob", "Asia/Tokyo")
    tokyo = await users.get("bob")
    assert tokyo is not None and tokyo.timezone == "Asia/Tokyo"


# --- Postgres specifics -----------------------------------------------------------------------


def test_split_url_strips_valet_params() -> None:
    dsn, opts = split_url("postgresql://u:p@h:5432/db?pool_size=3&sslmode=disable")
    assert dsn == "postgresql://u:p@h:5432/db?sslmode=disable"
    assert opts == {"pool_size": "3"}
    assert split_url("postgresql://h/db") == ("postgresql://h/db", {})


def test_rowcount_parses_status() -> None:
    assert rowcount("UPDATE 3") == 3
    assert rowcount("INSERT 0 1") == 1
    assert rowcount("DELETE 0") == 0
    assert rowcount("SELECT 5") == 0
    assert rowcount("CREATE TABLE") == 0
    assert rowcount("BEGIN") == 0


async def test_postgres_pool_size(postgres_dsn: str) -> None:
    db = await connect(postgres_dsn + "?pool_size=2")
    try:
        assert isinstance(db, PostgresDatabase)
        assert db._pool.get_max_size() == 2
        assert db._pool.get_min_size() == 1
        # More concurrent statements than connections just queue.
        vals = await asyncio.gather(*(db.fetchval("SELECT $1::int", i) for i in range(10)))
        assert vals == list(range(10))
    finally:
        await db.close()


async def test_postgres_sessions_stay_utc(postgres_dsn: str) -> None:
    name = postgres_dsn.rsplit("/", 1)[1]
    admin = await connect(postgres_dsn, migrate=False)
    await admin.execute(f"ALTER DATABASE {name} SET timezone = 'America/New_York'")
    await admin.close()
    db = await connect(postgres_dsn + "?pool_size=2")
    try:
        # Many acquire/release cycles: the pool's RESET ALL on release must not undo UTC.
        for _ in range(5):
            await asyncio.gather(*(db.fetchval("SELECT 1") for _ in range(4)))
            assert await db.fetchval("SHOW timezone") in ("UTC", "Etc/UTC")
            async with db.transaction() as tx:
                assert await tx.fetchval("SHOW timezone") in ("UTC", "Etc/UTC")
        assert await db.fetchval("SELECT $1::timestamptz::text", T0) == "2024-05-01 12:00:00+00"
    finally:
        await db.close()
