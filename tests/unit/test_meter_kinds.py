"""What the meter calls a message (bot.meter.gate.kind_of): a door reply by its kind; the
notice that a person's allowance is spent only when it is theirs (the owner hearing of
several people is not one notice); anything else by the outbox's kind."""

from __future__ import annotations

from bot.contracts.envelopes import OutboundMessage
from bot.meter.gate import NOTICE, kind_of


def message(user: str, key: str, kind: str = "notification") -> OutboundMessage:
    return OutboundMessage(1, user, "sms", "+1", "text", kind=kind, dedupe_key=key)


def test_the_allowance_notice_is_the_persons_own_and_the_owners_word_is_a_notification():
    assert kind_of(message("u_ana", "budget:u_ana:2026-12-02")) == NOTICE
    assert kind_of(message("owner", "budget:u_ana:2026-12-02:owner")) == "notification"
    assert kind_of(message("owner", "budget:u_bob:2026-12-02:owner")) == "notification"


def test_a_door_reply_keeps_its_kind_and_a_reply_is_a_reply():
    assert kind_of(message("u_ana", "reply:7", "door:help")) == "door:help"
    assert kind_of(message("u_ana", "reply:8", "reply")) == "reply"
