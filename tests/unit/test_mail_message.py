"""Mail as data: addresses checked the one way, a reply's thread headers (RFC 5322 3.6.4)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agents.email.message import (
    MAX_REFERENCES,
    checked_addresses,
    reply_headers,
    reply_subject,
    split_addresses,
)


@dataclass(frozen=True)
class Original:
    message_id: str = "<m3@example.com>"
    references: tuple[str, ...] = ()
    in_reply_to: str = ""
    subject: str = "Q3 plan"
    from_addr: str = "Ana <ana@example.com>"
    to: tuple[str, ...] = ("me@example.org",)
    cc: tuple[str, ...] = ()
    reply_to: tuple[str, ...] = ()


def test_a_reply_answers_the_message_and_carries_the_thread():
    reply = reply_headers(Original(references=("<m1@example.com>", "<m2@example.com>")),
                          "me@example.org")
    assert reply.in_reply_to == "<m3@example.com>"
    assert reply.references == ("<m1@example.com>", "<m2@example.com>", "<m3@example.com>")
    assert reply.to == ("Ana <ana@example.com>",) and reply.cc == ()
    assert reply.subject == "Re: Q3 plan"


def test_without_references_the_parent_comes_from_in_reply_to():
    reply = reply_headers(Original(in_reply_to="<m2@example.com>"), "me@example.org")
    assert reply.references == ("<m2@example.com>", "<m3@example.com>")


def test_a_message_without_an_id_gets_a_reply_without_thread_headers():
    reply = reply_headers(Original(message_id=""), "me@example.org")
    assert reply.in_reply_to == "" and reply.references == ()


def test_a_long_thread_keeps_its_root_and_latest_references():
    ids = tuple(f"<m{i}@example.com>" for i in range(40))
    reply = reply_headers(Original(references=ids, message_id="<last@example.com>"), "me@x.org")
    assert len(reply.references) == MAX_REFERENCES
    assert reply.references[0] == "<m0@example.com>"
    assert reply.references[-1] == "<last@example.com>"


@pytest.mark.parametrize("subject", ["Q3 plan", "Re: Q3 plan", "RE: re: Q3 plan",
                                     "AW: Q3 plan", "  re :Q3 plan"])
def test_re_is_never_doubled(subject):
    assert reply_subject(subject) == "Re: Q3 plan"


def test_reply_all_copies_everyone_but_the_person_themselves():
    original = Original(to=("Me <ME@example.org>", "bob@example.com"),
                        cc=("carol@example.com", "ana@example.com"))
    reply = reply_headers(original, "me@example.org", reply_all=True)
    assert reply.to == ("Ana <ana@example.com>",)
    assert reply.cc == ("bob@example.com", "carol@example.com")


def test_replying_to_ones_own_sent_message_goes_to_its_recipients():
    original = Original(from_addr="me@example.org", to=("bob@example.com",))
    assert reply_headers(original, "me@example.org").to == ("bob@example.com",)


def test_addresses_given_as_one_string_are_split_and_written_one_way():
    given = split_addresses('"Lima, Ana" <ana@example.com>; bob@example.com, BOB@example.com')
    assert checked_addresses(given) == ['"Lima, Ana" <ana@example.com>', "bob@example.com"]


@pytest.mark.parametrize("bad", ["ana", "ana@", "ana at example.com", "ana@localhost",
                                 "@example.com", "ana@example..com",
                                 "ana@example.com\nBcc: eve@example.net"])
def test_a_bad_address_says_what_to_write(bad):
    with pytest.raises(ValueError, match="is not an email address"):
        checked_addresses([bad])
