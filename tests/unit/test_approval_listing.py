"""One formatter for lists of pending approvals; each place that lists them picks its parts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.approvals.listing import TABLE_HEADER, pending_lines, table_rows
from bot.contracts.approvals import ApprovalRequest, ApprovalStatus, args_hash

NOW = datetime(2026, 1, 5, 9, tzinfo=UTC)


def approval(n: int, summary: str, code: str, **extra: object) -> ApprovalRequest:
    args = {"to": f"person{n}@example.com"}
    return ApprovalRequest(id=f"a{n}", code=code, user_id="u", call_id=f"c{n}",
                           tool_name="send_email", arguments=args, args_hash=args_hash(args),
                           summary=summary, details=args, created_at=NOW,
                           expires_at=NOW + timedelta(minutes=30), **extra)  # type: ignore[arg-type]


PENDING = [approval(1, "Send email to Ann", "4821"), approval(2, "Book flight", "7310")]


def test_each_list_of_pending_approvals_reads_as_it_did() -> None:
    assert pending_lines(PENDING, until=True) == [  # /pending
        "1. Send email to Ann (code 4821, until 09:30 UTC)",
        "2. Book flight (code 7310, until 09:30 UTC)"]
    assert pending_lines(PENDING, numbered=False) == [  # the LLM's context note
        "- Send email to Ann (code 4821)", "- Book flight (code 7310)"]
    assert pending_lines(PENDING) == [  # the prompt as the history keeps it
        "1. Send email to Ann (code 4821)", "2. Book flight (code 7310)"]
    assert pending_lines(PENDING, code=False) == [  # "which one do you mean?"
        "1. Send email to Ann", "2. Book flight"]
    assert pending_lines(PENDING[:1], code=False, details=True) == [  # the interpreter
        '1. Send email to Ann {"to": "person1@example.com"}']
    assert pending_lines([]) == []


def test_the_operators_table_has_one_row_per_request() -> None:
    done = approval(3, "Send email to Bo", "5555", status=ApprovalStatus.EXECUTED,
                    decided_by="console:local", result="Email sent\nto Bo " + "x" * 100)
    [row] = table_rows([done])
    assert len(row) == len(TABLE_HEADER)
    assert row[:5] == ("2026-01-05 09:00", "u", "5555", "executed by console:local",
                       "Send email to Bo")
    assert row[5].startswith("Email sent to Bo x") and len(row[5]) == 80 and row[5][-1] == "…"
    assert table_rows(PENDING[:1])[0][3:] == ("pending", "Send email to Ann", "-")
