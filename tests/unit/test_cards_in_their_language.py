"""An approval card says what will happen in its reader's language (persona/lines_cards.py),
with the day and time in their locale; by SMS, "1" does the card's own verb where the
language leads with it ("Responde 1 para enviar") and the catalog's where it ends with it
(German: "Antworte 1 zum Ausführen")."""

from __future__ import annotations

from agents.calendar.calendar import _summarize_create, _summarize_move
from agents.contacts.contacts import _summarize_proposal
from agents.email.sending import _summarize_reply, _summarize_send
from bot.approvals.flow import describe
from bot.contracts.envelopes import ApprovalPrompt
from channels.sms.render import render_prompts
from persona import load_persona
from persona.speaking import speaking_to
from tests.fakes import risky_tools

EVENT = {"title": "Comida con Ana", "start": "2026-03-30T12:45", "end": "2026-03-30T13:45",
         "attendees": ["ana@example.com"], "location": "Casa Lucio"}
MAIL = {"to": ["ana@example.com"], "cc": ["bob@example.com"], "subject": "Q3",
        "body": "Las cifras."}


def test_english_cards_read_as_they_always_did():
    assert _summarize_create(EVENT) == ("Add “Comida con Ana” Mon 30 Mar 12:45-13:45, at Casa "
                                        "Lucio, with ana@example.com")
    assert _summarize_send(MAIL) == ("Send email “Q3” to ana@example.com, cc bob@example.com: "
                                     "“Las cifras.”")
    assert _summarize_proposal({"name": "Ana"}) == "Save Ana to your address book: no details"


def test_cards_in_spanish_and_german_with_their_dates():
    with speaking_to("es"):
        assert _summarize_create(EVENT) == ("Añadir “Comida con Ana” el lun 30 mar, 12:45-13:45"
                                            ", en Casa Lucio, con ana@example.com")
        assert _summarize_send(MAIL) == ("Enviar el correo “Q3” a ana@example.com, con copia a "
                                         "bob@example.com: “Las cifras.”")
        assert _summarize_reply({"uid": 7, "body": "Vale", "reply_all": True}) == \
            "Responder a todos en el mensaje 7: “Vale”"
        assert _summarize_proposal({"name": "Ana", "phone": "+34 600", "found_in": "un correo"}) \
            == "Guardar a Ana en tu agenda: +34 600 (visto en un correo)"
    with speaking_to("de"):
        assert _summarize_move(EVENT) == "\"Comida con Ana\" verschieben auf Mo., 30. März, 12:45"
        summary, _ = describe(risky_tools.send_email.__valet_tool__, {"to": "ana@example.com"})
        assert summary == "send email (to: ana@example.com) ausführen"


def _prompt(summary: str) -> ApprovalPrompt:
    return ApprovalPrompt(id="a1", code="4821", position=1, summary=summary)


def test_by_sms_one_does_the_cards_verb_in_the_readers_language():
    lines = load_persona("default").lines
    with speaking_to("es"):
        said = render_prompts((_prompt(_summarize_send(MAIL)),), lines)
        assert "? Responde 1 para enviar, 2 para cancelar" in said, said
    with speaking_to("fr"):
        said = render_prompts((_prompt(_summarize_send(MAIL)),), lines)
        assert "? Répondez 1 pour envoyer, 2 pour annuler" in said, said
    with speaking_to("de"):  # the card ends with its verb: 1 does the catalog's
        said = render_prompts((_prompt(_summarize_send(MAIL)),), lines)
        assert said.startswith("E-Mail \"Q3\" an ana@example.com") and \
            "? Antworte 1 zum Ausführen, 2 zum Abbrechen" in said, said
    said = render_prompts((_prompt(_summarize_send(MAIL)),), lines)
    assert "? Reply 1 to send, 2 to cancel" in said, said
