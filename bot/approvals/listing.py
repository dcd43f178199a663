"""Pending approvals as lines of text: the one formatter behind every list of them.

    /pending             "1. Send email to team (code 4821, until 09:30 UTC)"   until=True
    the LLM's context    "- Send email to team (code 4821)"                    numbered=False
    the stored prompt    "1. Send email to team (code 4821)"
    "which one?"         "1. Send email to team"                               code=False
    the interpreter      "1. Send email to team {"to": "team@..."}"            code=False,
                                                                               details=True
    `valet approvals list` one table row per request (all statuses)           table_rows

Channels render the typed prompts themselves (bot.contracts.envelopes.ApprovalPrompt); these are the
lists the core says or stores.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from bot.contracts.approvals import ApprovalRequest, ApprovalStatus

TABLE_HEADER = ("CREATED (UTC)", "USER", "CODE", "STATUS", "ACTION", "RESULT")


def pending_lines(approvals: Iterable[ApprovalRequest], *, numbered: bool = True,
                  code: bool = True, until: bool = False, details: bool = False) -> list[str]:
    """One line per request, in the order given: its position ("1.", or "-" when not
    `numbered`) and summary; with `details` its arguments as JSON; in brackets its short
    code (`code`) and the time it expires (`until`)."""
    lines = []
    for position, approval in enumerate(approvals, 1):
        line = f"{position}." if numbered else "-"
        line += f" {approval.summary}"
        if details:
            line += f" {json.dumps(approval.details, default=str)}"
        notes = [f"code {approval.code}"] if code else []
        if until:
            notes.append(f"until {approval.expires_at:%H:%M} UTC")
        if notes:
            line += f" ({', '.join(notes)})"
        lines.append(line)
    return lines


def table_rows(approvals: Sequence[ApprovalRequest]) -> list[tuple[str, ...]]:
    """The operator's table (`valet approvals list`), one row per request, under
    TABLE_HEADER."""
    return [(f"{a.created_at:%Y-%m-%d %H:%M}", a.user_id, a.code,
             table_word(a.status) + (f" by {a.decided_by}" if a.decided_by else ""), a.summary,
             _one_line(a.result) if a.result else "-") for a in approvals]


def table_word(status: ApprovalStatus) -> str:
    """A status as the operator's table and the console's list show it, in plain words."""
    return "outcome unknown" if status is ApprovalStatus.UNKNOWN else status.value


def _one_line(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 1] + "…"
