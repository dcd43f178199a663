"""A plain turn (a known person's "hello", answered with no tool) costs at most 12 statements,
counted from the message's arrival to its reply queued and the message closed. On Postgres a
transaction's BEGIN and COMMIT count too (each is a round trip); on SQLite they are not round
trips and are left out. Counting is deterministic: this is a budget, not a timing.

When this fails, `make bench` (tests/bench/statements.py) prints the statements by issuer."""

from __future__ import annotations

from bot.db.counting import report
from tests.turn_statements import count_plain_turn

BUDGET = 12


async def test_a_plain_turn_stays_within_its_statement_budget(db_url: str) -> None:
    count = await count_plain_turn(db_url)
    counted = count.turn if db_url.startswith("postgres") else \
        [s for s in count.turn if s.sql not in ("BEGIN", "COMMIT")]
    assert len(counted) <= BUDGET, "\n".join(report(count.turn))


async def test_the_turn_reads_its_person_and_history_once(db_url: str) -> None:
    count = await count_plain_turn(db_url)
    reads = [s.sql for s in count.turn if s.sql.startswith("SELECT")]
    # The person's row with what their stores hold, and the history: nothing else.
    assert sorted(reads) == ["SELECT messages", "SELECT users"], "\n".join(report(count.turn))


async def test_a_known_person_s_message_is_stored_in_their_queue_in_one_statement(
        db_url: str) -> None:
    count = await count_plain_turn(db_url)
    arriving = [s.sql for s in count.turn if s.under("Gateway.receive_row")]
    assert arriving == ["INSERT inbox"], "\n".join(report(count.turn))


async def test_the_turn_is_stored_with_its_reply_in_one_write(db_url: str) -> None:
    """History, usage, trace, the reply queued, the message closed: one statement on
    Postgres, one transaction on SQLite. A plain answer is not journalled (nothing was done
    on its say-so), so there is no journal to write, nor to finish."""
    count = await count_plain_turn(db_url)
    closing = [s.sql for s in count.turn if s.under("Gateway._close")]
    if db_url.startswith("postgres"):
        assert len(closing) == 1 and closing[0].endswith("writes in one statement"), closing
    else:
        assert closing[0] == "BEGIN" and closing[-1] == "COMMIT", closing
        assert {"INSERT messages", "INSERT turn_usage", "INSERT outbox",
                "UPDATE inbox"} <= set(closing)
    assert not [s for s in count.turn if "turn_journal" in s.sql], "\n".join(report(count.turn))
    assert [s for s in count.turn if s.sql in ("BEGIN", "COMMIT")
            and not s.under("Gateway._close")] == []  # no other transaction in the turn
