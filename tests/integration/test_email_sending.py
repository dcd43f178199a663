"""Sending email against a real SMTP server (aiosmtpd, AUTH over loopback): asked first with
From, To, Cc, Subject and the body on the card; sent once, with a Message-ID made from the
approval id; queued while the server is down and sent once when it is back (the person told);
refused for good is reported and never retried; a reply stays in its thread; an edit is a new
approval and only the edited mail goes out."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from agents.email.account import MailAccount
from agents.email.message import Draft
from agents.email.outbox import MailStatus
from bot.contracts.approvals import ApprovalStatus
from bot.contracts.envelopes import Inbound
from bot.contracts.tool_context import ToolExecutionContext
from bot.credentials import new_key
from tests.fakes.fake_openai import Reply, ToolCall
from tests.fakes.smtp_server import SmtpServer
from tests.helpers import RecordingSender, app_with_connected_owner, requests_of

NOW = datetime(2026, 3, 30, 9, 0, tzinfo=UTC)
BODY = "Hi Ana,\nthe Q3 numbers are attached.\nMia"
EMAIL = {"to": ["Ana Lima <ana@example.com>"], "subject": "Numbers", "body": BODY,
         "cc": "bob@example.com"}


@pytest.fixture(autouse=True)
def secret_key(monkeypatch):
    monkeypatch.setenv("VALET_SECRET_KEY", new_key())


@pytest.fixture
async def smtp():
    server = SmtpServer()
    yield server
    await server.stop()


@dataclass(frozen=True)
class Headers:  # what agents.email.imap.message_headers gives (MailHeaders)
    uid: int
    message_id: str
    references: tuple[str, ...]
    in_reply_to: str
    subject: str
    from_addr: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    date: datetime | None = None
    reply_to: tuple[str, ...] = ()


async def connected_app(app_factory, smtp: SmtpServer):
    from bot.contracts.clock import FakeClock

    return await app_with_connected_owner(app_factory, "email", smtp.secret(),
                                          clock=FakeClock(NOW))


def say(app, user: str, text: str):
    return app.orchestrator.handle_message(Inbound(
        user_id=user, channel="console", text=text, address="local", received_at=NOW))


def last_result(fake_llm) -> str:
    return [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]


async def ask_to_send(app, me, fake_llm, args=EMAIL):
    fake_llm.script(Reply(tool_calls=[ToolCall("send_mail", args)]))
    reply = await say(app, me, "email Ana the Q3 numbers, copy Bob")
    [approval] = await requests_of(app, reply)
    return approval


async def test_an_approved_email_arrives_once_with_the_approval_as_its_message_id(
        app_factory, fake_llm, smtp):
    await smtp.start()
    app, me = await connected_app(app_factory, smtp)
    approval = await ask_to_send(app, me, fake_llm)
    assert approval.summary == (
        "Send email “Numbers” to Ana Lima <ana@example.com>, cc bob@example.com from "
        "Mia Example <me@example.org>: “Hi Ana, / the Q3 numbers are attached. / Mia”")
    assert approval.details["body"] == BODY  # the whole body, for channels that show details
    assert smtp.received == []  # nothing goes out before the OK

    fake_llm.script(Reply(content="Sent to Ana."))
    reply = await say(app, me, "yes")
    assert reply.text == "Sent to Ana."
    assert last_result(fake_llm) == ("Sent to ana@example.com, bob@example.com "
                                     "(subject “Numbers”).")
    [mail] = smtp.received
    assert mail.mail_from == "me@example.org"
    assert mail.rcpt_tos == ("ana@example.com", "bob@example.com")
    assert smtp.recorder.logins  # it logged in (AUTH over plain text: loopback only)
    message = mail.message
    assert message["From"] == "Mia Example <me@example.org>"
    assert message["To"] == "Ana Lima <ana@example.com>"
    assert message["Cc"] == "bob@example.com"
    assert message["Subject"] == "Numbers"
    assert message["Message-ID"] == f"<valet.{approval.id}@example.org>"
    assert message["Date"].datetime == NOW
    assert message.get_content().replace("\r\n", "\n") == BODY + "\n"
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.EXECUTED


async def test_a_long_body_shows_its_first_lines_and_length_on_the_card(app_factory, fake_llm,
                                                                       smtp):
    app, me = await connected_app(app_factory, smtp)
    body = "Hello team,\n" + "These are the numbers for the quarter. " * 20
    approval = await ask_to_send(app, me, fake_llm, {**EMAIL, "body": body, "cc": None})
    assert approval.summary.startswith("Send email “Numbers” to Ana Lima <ana@example.com> "
                                       "from Mia Example <me@example.org>: “Hello team, / "
                                       "These are the numbers")
    assert approval.summary.endswith(f"…” ({len(body.strip())} characters)")
    assert len(approval.summary) < 300  # SMS shows the summary, cut at 300 characters


async def test_a_bad_address_is_corrected_before_anything_is_asked(app_factory, fake_llm, smtp):
    app, me = await connected_app(app_factory, smtp)
    fake_llm.script(Reply(tool_calls=[ToolCall("send_mail", {**EMAIL, "to": "ana at example"})]),
                    Reply(content="What is Ana's address?"))
    reply = await say(app, me, "email Ana")
    assert reply.text == "What is Ana's address?" and not reply.prompts
    assert "'ana at example' is not an email address" in last_result(fake_llm)
    assert await app.approvals.store.pending(me, NOW) == []


async def test_a_registry_without_approval_still_cannot_send_mail_unasked(
        app_factory, fake_llm, smtp):
    await smtp.start()
    app, me = await connected_app(app_factory, smtp)
    send = app.orchestrator.deps.registry.get("send_mail")
    ctx = ToolExecutionContext(user_id=me, clock=app.clock,
                               services=app.orchestrator.deps.tool_services, call_id="c1")
    outcome = await send.run_with_approval(dict(EMAIL), ctx)  # as if no approval were asked
    assert "only once the user has approved it" in str(getattr(outcome, "content", outcome))
    assert smtp.received == [] and await app.mail.outbox.get("c1") is None


async def test_a_second_yes_or_a_retried_submit_sends_nothing_more(app_factory, fake_llm, smtp):
    await smtp.start()
    app, me = await connected_app(app_factory, smtp)
    approval = await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content="Sent."), Reply(content="Nothing is waiting."))
    await say(app, me, "yes")
    await say(app, me, "yes")
    assert len(smtp.received) == 1
    # The same approval handed to the outbox again (a retried execution): the stored message
    # wins, and it was sent already.
    again = await app.mail.submit(
        approval_id=approval.id, user_id=me, account=MailAccount.from_secret(smtp.secret()),
        draft=Draft(("someone@else.example",), "Other", "Other body"))
    assert again.status is MailStatus.SENT and again.subject == "Numbers"
    assert len(smtp.received) == 1


async def test_mail_queued_while_the_server_is_down_goes_out_once_when_it_is_back(
        app_factory, fake_llm, smtp):
    app, me = await connected_app(app_factory, smtp)  # the SMTP server is not running
    console = RecordingSender("console")
    app.add_channel(console)
    await app.gateway.start()
    await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content="The server is down; it's queued."))
    await say(app, me, "yes")
    assert last_result(fake_llm).startswith(
        "Queued: the mail server did not answer; it will go out as soon as it does (you'll be "
        "told). (the mail server 127.0.0.1:")
    assert "connection refused" in last_result(fake_llm)

    await app.mail.run_once()  # not due yet: nothing is tried
    await smtp.start()
    app.clock.advance(seconds=31)  # the first retry's backoff
    await app.mail.run_once()
    await app.mail.run_once()  # a second pass sends and tells nothing more
    await app.gateway.wait_idle()
    assert len(smtp.received) == 1
    assert smtp.received[0].message["Subject"] == "Numbers"
    assert console.texts() == [
        "Sent your email “Numbers” to ana@example.com, bob@example.com."]


async def test_a_refused_mail_is_reported_as_failed_and_never_retried(app_factory, fake_llm,
                                                                      smtp):
    await smtp.start()
    smtp.recorder.refuse = "550 5.7.1 Message rejected by policy"
    app, me = await connected_app(app_factory, smtp)
    approval = await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content="The server refused it."))
    await say(app, me, "yes")
    assert last_result(fake_llm) == ("Not sent: the mail server refused the message: 550 5.7.1 "
                                     "Message rejected by policy.")
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.FAILED
    smtp.recorder.refuse = None
    app.clock.advance(hours=1)
    await app.mail.run_once()
    assert smtp.received == []
    stored = await app.mail.outbox.get(approval.id)
    assert stored is not None and stored.status is MailStatus.FAILED and stored.attempts == 1


async def test_a_connection_lost_in_the_middle_of_data_is_never_sent_again(
        app_factory, fake_llm, smtp):
    await smtp.start()
    smtp.recorder.drop_in_data = True  # the server got it; its answer is lost
    app, me = await connected_app(app_factory, smtp)
    approval = await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content="Not sure it went."))
    reply = await say(app, me, "yes")
    assert last_result(fake_llm).startswith("Outcome unknown:")
    assert "check their Sent folder" in last_result(fake_llm)
    # Issue [truth] 1: the approval says so too, the person is told what to check, and the
    # same mail is offered again as a new card (never sent again on its own).
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.UNKNOWN
    assert reply.text.startswith("I may or may not have sent your email “Numbers” to "
                                 "ana@example.com, bob@example.com")
    assert "Check your Sent folder before you approve sending it again." in reply.text
    [again] = await requests_of(app, reply)
    assert again.replaces == approval.id and again.arguments == approval.arguments
    smtp.recorder.drop_in_data = False
    app.clock.advance(hours=1)
    await app.mail.run_once()
    assert len(smtp.received) == 1  # the one the server took; never a second
    assert (await app.mail.outbox.get(approval.id)).status is MailStatus.UNKNOWN


async def test_a_queued_mail_cut_off_later_turns_its_approval_unknown_and_offers_it_again(
        app_factory, fake_llm, smtp):
    """The server was down at the yes (queued: done for now); the deliverer's later attempt
    is cut off in the middle. The approval follows its mail: outcome unknown, told once
    (with the card to send it again), and the model hears it at the next turn."""
    smtp.recorder.drop_in_data = True  # when it comes up, the answer to DATA is lost
    app, me = await connected_app(app_factory, smtp)
    console = RecordingSender("console")
    app.add_channel(console)
    await app.gateway.start()
    approval = await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content="The server is down; it's queued."))
    await say(app, me, "yes")
    stored = await app.approvals.store.get(approval.id)
    assert stored.status is ApprovalStatus.EXECUTED  # queued: the mail outbox has it
    await smtp.start()
    app.clock.advance(hours=1)
    await app.mail.run_once()
    assert (await app.mail.outbox.get(approval.id)).status is MailStatus.UNKNOWN
    await app.sweep_approvals()
    await app.sweep_approvals()  # told once
    await app.gateway.wait_idle()
    assert (await app.approvals.store.get(approval.id)).status is ApprovalStatus.UNKNOWN
    told = [t for t in console.texts() if "may or may not have sent" in t]
    assert len(told) == 1 and "before you approve sending it again" in told[0]
    assert console.cards[console.texts().index(told[0])] == (approval.summary,)
    fake_llm.script(Reply(content="It may not have gone."))
    await say(app, me, "did it go?")
    assert last_result(fake_llm).startswith("Outcome unknown:")


async def test_a_reply_keeps_the_thread(app_factory, fake_llm, smtp):
    await smtp.start()
    app, me = await connected_app(app_factory, smtp)
    original = Headers(42, "<q3-2@example.com>", ("<q3-1@example.com>",), "<q3-1@example.com>",
                       "RE: Q3 plan", "Ana Lima <ana@example.com>",
                       ("me@example.org", "bob@example.com"), ("carol@example.com",))
    looked_up: list[int] = []

    async def message_headers(account, uid):
        looked_up.append(uid)
        return original

    app.orchestrator.deps.tool_services = replace(app.services, mail_headers=message_headers)
    fake_llm.script(Reply(tool_calls=[ToolCall("reply_to_mail", {
        "uid": 42, "body": "Sounds good.", "reply_all": True})]))
    reply = await say(app, me, "reply all: sounds good")
    [approval] = await requests_of(app, reply)
    assert approval.summary == (
        "Reply “Re: Q3 plan” to Ana Lima <ana@example.com>, cc bob@example.com, "
        "carol@example.com from Mia Example <me@example.org>: “Sounds good.”")
    fake_llm.script(Reply(content="Replied."))
    await say(app, me, "yes")
    [mail] = smtp.received
    assert mail.message["In-Reply-To"] == "<q3-2@example.com>"
    assert mail.message["References"] == "<q3-1@example.com> <q3-2@example.com>"
    assert mail.message["Subject"] == "Re: Q3 plan"
    assert mail.message["To"] == "Ana Lima <ana@example.com>"
    assert mail.message["Cc"] == "bob@example.com, carol@example.com"
    assert mail.rcpt_tos == ("ana@example.com", "bob@example.com", "carol@example.com")
    # for the check before asking, the card, then the approved message
    assert looked_up == [42, 42, 42]


async def test_an_edit_makes_a_new_approval_and_only_the_edited_mail_is_sent(
        app_factory, fake_llm, smtp):
    await smtp.start()
    app, me = await connected_app(app_factory, smtp)
    first = await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content=json.dumps({**EMAIL, "subject": "Q3"})))
    reply = await say(app, me, "change the subject to 'Q3'")  # the edit form (issue 43)
    [edited] = await requests_of(app, reply)
    assert edited.id != first.id and edited.replaces == first.id
    assert edited.summary.startswith("Send email “Q3” to Ana Lima <ana@example.com>, cc "
                                     "bob@example.com from Mia Example <me@example.org>")
    assert smtp.received == []
    fake_llm.script(Reply(content="Sent with the subject Q3."))
    await say(app, me, "yes")
    [mail] = smtp.received
    assert mail.message["Subject"] == "Q3"
    assert mail.message["Message-ID"] == f"<valet.{edited.id}@example.org>"
    assert (await app.approvals.store.get(first.id)).status is ApprovalStatus.SUPERSEDED


async def test_queued_mail_of_a_disconnected_account_fails_and_the_person_is_told(
        app_factory, fake_llm, smtp):
    app, me = await connected_app(app_factory, smtp)  # the SMTP server is not running
    console = RecordingSender("console")
    app.add_channel(console)
    await app.gateway.start()
    approval = await ask_to_send(app, me, fake_llm)
    fake_llm.script(Reply(content="Queued."))
    await say(app, me, "yes")
    await app.services.credentials.delete(me, "email")
    await smtp.start()
    app.clock.advance(minutes=5)
    await app.mail.run_once()
    await app.gateway.wait_idle()
    assert smtp.received == []
    assert (await app.mail.outbox.get(approval.id)).status is MailStatus.FAILED
    assert console.texts() == [
        "I could not send your email “Numbers” to ana@example.com, bob@example.com: no email "
        "account is connected any more."]
