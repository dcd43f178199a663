"""The lines about people (who is let in, what they may spend a day, what Valet remembers of
them): pairing requests, access, the daily allowance, memory."""

from __future__ import annotations

from persona.line_group import LineGroup


class PairingWords(LineGroup):
    """How a pairing request is answered, by its code, on every channel ("PAIR 4K7QXZ"); never
    a bare digit (bot.turn.commands reads them back; the owner's notices and the SMS card say
    them)."""

    pairing_approve_word: str = "PAIR"
    pairing_deny_word: str = "DENY"


class AccessLines(PairingWords):
    """Who may talk to Valet: linking channels, strangers asking in, the owner letting them
    in (bot/people/access.py, /link, /pair)."""
    link_done: str = "Linked. I'll know you here too from now on."
    link_unknown_code: str = "That link code is unknown or has expired."
    link_no_more_guesses: str = ("That link code is unknown or has expired, and that was one "
                                 "wrong code too many: I'll ignore link codes from you for a "
                                 "while.")
    pairing_stranger: str = ("Hi! This is a private assistant and I don't know you yet. If you "
                             "know its owner, ask them to approve code {code}.")
    # To the owner: {who} is one of the two below ({name} quoted, {where} "telegram 123").
    # A request is answered with its code ({approve} / {deny}: pairing_approve_word,
    # pairing_deny_word), never a bare digit.
    pairing_owner_notice: str = ("{who} wants to talk to me. Reply {approve} {code} to let "
                                 "them in, or {deny} {code}.")
    pairing_who_named: str = "Someone calling themselves {name} ({where})"
    pairing_who: str = "Someone on {where}"
    # Several new requests at once (at most one message about them per pairing.notice_minutes):
    # {count} how many asked since the last one, {requests} one line each of those still
    # waiting (pairing_owner_item).
    pairing_owner_batch: str = ("{count} people asked to talk to me. Waiting now:\n{requests}\n"
                                "Reply {approve} and a code to let one in, or {deny} and the "
                                "code; /pair list shows everyone waiting.")
    pairing_owner_item: str = "{code}: {who}"
    # To the owner, once an hour at most: strangers texted more than sms.stranger_replies_per_hour
    # allows; {count} the allowance, {channel}, {minutes} until it starts again.
    strangers_capped: str = ("More people I don't know are texting me than usual: I answered "
                             "{count} on {channel} within the hour and won't answer more there "
                             "for {minutes} minutes, so they can't run up your bill. Nobody new "
                             "was let in.")
    pairing_prompt: str = "Let the sender of code {code} in"
    pairing_owner_only: str = "Only the owner can approve new people."
    pairing_none: str = "Nobody is waiting to be let in."
    pairing_waiting: str = "Waiting to be let in:\n{requests}"
    pairing_usage: str = "Use /pair list, /pair approve CODE or /pair deny CODE."
    pairing_denied: str = "Denied {code}."
    pairing_no_request: str = "No pending request {code}."
    pairing_no_request_expired: str = "No pending request {code} (it may have expired)."
    pairing_approved: str = "Approved {code}: {name} can talk to me now."
    pairing_welcome: str = "You're in! I'm your assistant now: ask me anything."
    pairing_letting_in: str = "Letting them in…"
    pairing_refusing: str = "Refusing…"
    # The first person who sent the claim code `valet serve` printed is the owner now.
    owner_claimed: str = ("Done: you're my owner now. I'll answer you here from now on; "
                          "ask me anything.")


class BudgetLines(LineGroup):
    """A person's daily allowance (budget:, bot/gateway/budget.py) and /usage. Amounts are
    written like $0.52."""

    # To the person, once a day, when their messages start to wait: one sentence.
    budget_reached: str = ("You've reached today's allowance, so I'll answer your messages "
                           "tomorrow, or sooner if my owner raises it.")
    # To the owner, once a day per person ({name}; {user} how the command names them, e.g.
    # sms:+12125550123).
    budget_reached_owner: str = ("{name} reached today's allowance ({spent} of {allowance}): "
                                 "their messages wait until tomorrow, or until you raise it "
                                 "with `valet budget raise {user}` or on the console's Usage "
                                 "page.")
    # /usage: {today} and {month} spent, {allowance} today's.
    # {today}: the last 24 hours, the window the allowance holds (bot.meter).
    usage_report: str = ("Last 24 hours: {today} of your {allowance} allowance. This month: "
                         "{month}.")
    usage_report_unlimited: str = "Last 24 hours: {today}. This month: {month}."
    about_usage: str = "what you've spent today and this month"


class MemoryLines(LineGroup):
    """/memory and /forget (bot/memory); the memory tools read the same lines."""

    memory_nothing: str = "I don't remember anything about you yet."
    memory_nothing_about: str = "I don't remember anything about that."
    memory_listing: str = "What I remember about you:\n{facts}"
    memory_listing_more: str = ("What I remember about you (the newest first; there is "
                                "more):\n{facts}")
    memory_forgotten: str = "Forgotten:\n{facts}"
    memory_forget_nothing: str = "I found nothing like that to forget."
    memory_forget_usage: str = ("Say what to forget: /forget 12 (a number from /memory) or "
                                "/forget words the fact contains. To forget everything, just "
                                "ask me.")
    about_memory: str = "what I remember about you"
    about_forget: str = "forget a fact: /forget NUMBER, or words it contains"
