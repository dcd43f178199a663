"""Real phrasings of replies while an action waits for the person's OK, and what each must do.

One row: (what the person writes, what waits, what it must do, the persona's languages).
What it must do:

    approve / reject / edit   the one request waiting (or, with two waiting, "1:approve
                              2:reject": each request by its position)
    new                       not an answer of the table: a message like any other,
                              nothing decided (a reminder of what waits ends its answer)
    ask                       a question back ("which one?", "yes or no?"), nothing decided

Collected from the ways people answer a "may I?" text (and the ones that broke Valet: a
question with "ok" in it once approved; a verb, "delete the message", that sent an SMS).
Since issue 43 only the closed answer grammar (bot/approvals/grammar.py, docs/approvals.md)
decides: a verb ("send it", "delete the note"), a named request ("yes to the flight"), a
change in a sentence ("send it but make the subject …") or a verdict before a position
("yes 1") is "new", whatever it says. Checked by tests/unit/test_approval_phrasings.py
through bot.approvals.replies.parse_reply.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.contracts.approvals import ApprovalRequest, args_hash

NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)


def request(n: int, tool: str, summary: str, code: str, arguments: dict[str, object], *,
            editable: bool = True) -> ApprovalRequest:
    return ApprovalRequest(id=f"a{n}", code=code, user_id="u", call_id=f"c{n}", tool_name=tool,
                           arguments=arguments, args_hash=args_hash(arguments),
                           summary=summary, details={}, expires_at=NOW + timedelta(minutes=30),
                           created_at=NOW, allow_modification=editable)


NOTE = request(1, "delete_note", "Delete the note #3 “Dentist”", "4821", {"note_id": 3},
               editable=False)
ANA = request(1, "message_someone", "Send Ana (SMS +447700900123): “Running late, 10 min”",
              "5532", {"to": "Ana", "text": "Running late, 10 min"})
EMAIL = request(1, "send_email", "Send email to team@corp.example (subject: Q3)", "7310",
                {"to": "team@corp.example", "subject": "Q3", "body": "Numbers attached."})
FLIGHT = request(2, "book_flight", "Book flight LHR to JFK on 3 March", "1942",
                 {"origin": "LHR", "destination": "JFK", "date": "2026-03-03"})
NOTE_2 = request(2, "delete_note", "Delete the note #3 “Dentist”", "4821", {"note_id": 3},
                 editable=False)
WAITING = {"note": [NOTE], "ana": [ANA], "email": [EMAIL], "two": [EMAIL, FLIGHT],
           "ana+note": [ANA, NOTE_2]}

EN, ALL = ("en",), ("en", "es", "fr", "de")

PHRASINGS: list[tuple[str, str, str, tuple[str, ...]]] = [
    # --- plain yes ------------------------------------------------------------------------
    ("yes", "note", "approve", EN),
    ("Yes", "ana", "approve", EN),
    ("YES", "email", "approve", EN),
    ("yes!", "note", "approve", EN),
    ("Yes.", "note", "approve", EN),
    ("y", "note", "approve", EN),
    ("Y", "ana", "approve", EN),
    ("yeah", "note", "approve", EN),
    ("yep", "ana", "approve", EN),
    ("yup", "note", "approve", EN),
    ("ok", "note", "approve", EN),
    ("OK", "ana", "approve", EN),
    ("okay", "email", "approve", EN),
    ("k", "ana", "approve", EN),
    ("kk", "note", "approve", EN),
    ("sure", "note", "approve", EN),
    ("sure!", "ana", "approve", EN),
    ("👍", "note", "approve", EN),
    ("👍🏻", "ana", "approve", EN),
    ("✅", "note", "approve", EN),
    ("go ahead", "ana", "approve", EN),
    ("Go ahead please", "note", "approve", EN),
    ("go for it", "note", "approve", EN),
    ("do it", "note", "approve", EN),
    ("please do", "ana", "approve", EN),
    ("send it", "ana", "new", EN),
    ("Send it!", "email", "new", EN),
    ("yes please", "ana", "approve", EN),
    ("Yes please, go ahead", "ana", "approve", EN),
    ("yes, thanks", "note", "approve", EN),
    ("ok thanks", "note", "approve", EN),
    ("ok do it, thanks", "note", "approve", EN),
    ("Yes, send it!", "ana", "new", EN),
    ("yes yes", "note", "approve", EN),
    ("oh yes", "note", "new", EN),
    ("absolutely", "ana", "approve", EN),
    ("of course", "ana", "approve", EN),
    ("alright", "note", "approve", EN),
    ("approve", "email", "approve", EN),
    ("approved", "email", "approve", EN),
    ("confirm", "note", "approve", EN),
    ("yes delete it", "note", "new", EN),
    ("delete it", "note", "new", EN),
    ("delete the note", "note", "new", EN),
    ("yes, delete the dentist note", "note", "new", EN),
    ("yes send the message to Ana", "ana", "new", EN),
    ("send the email", "email", "new", EN),
    ("yes send the email", "email", "new", EN),
    ("yes, text Ana", "ana", "new", EN),
    ("1 yes", "note", "approve", EN),
    ("yes 1", "ana", "new", EN),
    ("YES 4821", "note", "approve", EN),
    ("4821 yes", "note", "approve", EN),
    ("4821 ok", "note", "approve", EN),
    ("#1 yes", "note", "approve", EN),
    ("yes to all", "note", "approve", EN),
    # --- plain no -------------------------------------------------------------------------
    ("no", "note", "reject", EN),
    ("No", "ana", "reject", EN),
    ("NO!", "email", "reject", EN),
    ("n", "note", "reject", EN),
    ("nope", "ana", "reject", EN),
    ("nah", "note", "reject", EN),
    ("no thanks", "ana", "reject", EN),
    ("No thank you.", "note", "reject", EN),
    ("cancel", "note", "reject", EN),
    ("cancel it", "ana", "reject", EN),
    ("no, cancel it", "ana", "reject", EN),
    ("no thanks, cancel", "note", "reject", EN),
    ("don't", "note", "reject", EN),
    ("don't send it", "ana", "new", EN),
    ("do not send it", "ana", "new", EN),
    ("no don't delete it", "note", "new", EN),
    ("never mind", "ana", "reject", EN),
    ("forget it", "note", "reject", EN),
    ("stop", "note", "reject", EN),
    ("skip", "email", "reject", EN),
    ("👎", "note", "reject", EN),
    ("❌", "ana", "reject", EN),
    ("reject", "email", "reject", EN),
    ("no, not Ana", "ana", "new", EN),
    ("no, keep the note", "note", "new", EN),
    ("4821 no", "note", "reject", EN),
    ("no 1", "ana", "new", EN),
    ("cancel all", "note", "reject", EN),
    # --- several waiting -----------------------------------------------------------------
    ("1 yes 2 no", "two", "1:approve 2:reject", EN),
    ("1 no 2 yes", "two", "1:reject 2:approve", EN),
    ("yes 1, no 2", "two", "new", EN),
    ("2: yes", "two", "2:approve", EN),
    ("YES 1942", "two", "2:approve", EN),
    ("7310 yes 1942 no", "two", "1:approve 2:reject", EN),
    ("yes to all", "two", "1:approve 2:approve", EN),
    ("yes to both", "two", "1:approve 2:approve", EN),
    ("cancel both", "two", "1:reject 2:reject", EN),
    ("no to all", "two", "1:reject 2:reject", EN),
    ("approve the email, cancel the flight", "two", "new", EN),
    ("send the email and skip the flight", "two", "new", EN),
    ("book the flight", "two", "new", EN),
    ("yes to the flight", "two", "new", EN),
    ("delete the note, don't text Ana", "ana+note", "new", EN),
    ("yes", "two", "ask", EN),
    ("no", "two", "ask", EN),
    ("ok", "ana+note", "ask", EN),
    ("1 yes 1 no", "two", "ask", EN),
    # --- changes --------------------------------------------------------------------------
    ("send it but make the subject 'Q3 numbers'", "email", "new", EN),
    ("yes but change the subject to Q3 numbers", "email", "new", EN),
    ("change the subject to Q3", "email", "edit", EN),
    ("make it say 15 min", "ana", "new", EN),
    ("send it to Bob instead", "ana", "new", EN),
    ("yes, add Bob", "email", "new", EN),  # a change, or another request?
    ("add Bob to the email", "email", "new", EN),
    ("no, make it 20 min", "ana", "new", EN),
    ("yes but change it to the other note", "note", "new", EN),  # a note cannot be changed
    ("change the subject", "two", "ask", EN),  # which one?
    ("change 2 the date to 4 March", "two", "2:edit", EN),
    ("edit: make it 15 min", "ana", "edit", EN),
    ("change 10 min to 20 min", "ana", "edit", EN),  # 10 names no card: part of the change
    ("change 3 the date", "two", "ask", EN),
    ("change it to note #4", "note", "ask", EN),  # a note cannot be changed
    # --- the card's code alone, emoji, quotes and sarcasm (issue 43) ----------------------
    ("4821", "note", "approve", EN),
    ("1942", "two", "2:approve", EN),
    ("Yes 👍", "note", "approve", EN),
    ("ok 🙏", "ana", "approve", EN),
    ('"yes"', "note", "new", EN),
    ("'yes'", "ana", "new", EN),
    ("yes 🙄", "note", "new", EN),
    ("yeah right", "note", "new", EN),
    ("oh sure", "note", "new", EN),
    ("ok 1", "ana", "new", EN),
    # --- questions: never an answer -------------------------------------------------------
    ("is ana ok?", "ana", "new", EN),
    ("ok what's ana's number?", "ana", "new", EN),
    ("ok what does the dentist note say?", "note", "new", EN),
    ("is the dentist note ok?", "note", "new", EN),
    ("sure, but what time is the dentist?", "note", "new", EN),
    ("ok what does the dentist note say", "note", "new", EN),
    ("is ana ok", "ana", "new", EN),
    ("yes?", "note", "new", EN),
    ("ok?", "ana", "new", EN),
    ("1?", "note", "new", EN),
    ("what is it?", "note", "new", EN),
    ("which note?", "note", "new", EN),
    ("what note", "note", "new", EN),
    ("wait, which note is that", "note", "new", EN),
    ("yes, what's the weather tomorrow", "note", "new", EN),
    ("can you send it later?", "ana", "new", EN),
    ("could you delete it tomorrow instead", "note", "new", EN),
    ("do you have Ana's email?", "ana", "new", EN),
    ("did Ana reply", "ana", "new", EN),
    ("will it go by SMS", "ana", "new", EN),
    ("how long is the note", "note", "new", EN),
    ("why do you need to delete it", "note", "new", EN),
    ("no, wait, is it today", "note", "new", EN),
    ("where is the dentist", "note", "new", EN),
    ("who is ana", "ana", "new", EN),
    ("are you sure", "note", "new", EN),
    ("should I?", "note", "new", EN),
    ("yes or no?", "note", "new", EN),
    ("hmm is that the right one", "note", "new", EN),
    ("ok so when is it", "note", "new", EN),
    ("Send it? Sure, but which Ana is it", "ana", "new", EN),
    # --- yes words that do not head their clause, other requests --------------------------
    ("I said no to coffee today", "note", "new", EN),
    ("the dentist is ok", "note", "new", EN),
    ("tell ana it's ok", "ana", "new", EN),
    ("yes, and remind me at 5 to call mum", "note", "new", EN),
    ("ok, set a timer for 10 minutes", "note", "new", EN),
    ("sure, add milk to my shopping list", "note", "new", EN),
    ("add milk to my shopping list", "note", "new", EN),
    ("what's the weather like", "note", "new", EN),
    ("remind me at 5", "note", "new", EN),
    ("thanks for earlier", "note", "new", EN),
    ("thanks", "ana", "new", EN),
    ("hello", "note", "new", EN),
    ("wait", "note", "new", EN),
    ("hold on", "ana", "new", EN),
    ("let's go to the store", "note", "new", EN),
    ("remind me in 1 minute to stretch", "note", "new", EN),
    ("1", "ana", "new", EN),
    ("call mum at 7", "ana", "new", EN),
    # --- touching what waits, but no answer of the table: nothing decided ----------------
    ("no rush", "ana", "new", EN),
    ("yes I think so", "note", "new", EN),
    ("no, not now", "note", "new", EN),
    ("yes no", "note", "new", EN),
    ("sounds good", "note", "new", EN),
    ("perfect", "ana", "new", EN),
    ("fine", "note", "new", EN),
    ("great, thanks", "ana", "new", EN),
    ("the email is fine I guess, but the flight with a window seat please, no wait", "two",
     "new", EN),
    ("book lunch with Ana at 1pm", "note", "new", EN),
    ("remind me at 1pm to call mom, no rush", "note", "new", EN),
    ("yes do it now", "note", "new", EN),
    ("delete the other one", "note", "new", EN),
    ("no, send it", "ana", "new", EN),  # yes and no to the same request: which is it?
    ("Ana, the dentist", "ana+note", "new", EN),
    # --- other languages (a persona that speaks them), and mixed --------------------------
    ("sí", "note", "approve", ALL),
    ("si", "ana", "approve", ALL),
    ("vale", "note", "approve", ALL),
    ("sí, por favor", "ana", "approve", ALL),
    ("claro que sí", "note", "approve", ALL),
    ("mándalo", "ana", "new", ALL),
    ("no, gracias", "note", "reject", ALL),
    ("cancélalo", "ana", "reject", ALL),
    ("oui", "note", "approve", ALL),
    ("oui merci", "ana", "approve", ALL),
    ("d'accord", "note", "approve", ALL),
    ("vas-y", "ana", "approve", ALL),
    ("non merci", "note", "reject", ALL),
    ("ja", "note", "approve", ALL),
    ("ja bitte", "ana", "approve", ALL),
    ("nein danke", "note", "reject", ALL),
    ("ok gracias", "ana", "approve", ALL),
    ("yes merci", "note", "approve", ALL),
    ("sí thanks", "note", "approve", ALL),
    ("ok danke", "ana", "approve", ALL),
    ("¿qué hora es?", "note", "new", ALL),
    ("sí, ¿qué dice la nota?", "note", "new", ALL),
    ("qué dice la nota", "note", "new", ALL),
    ("c'est quoi la note ?", "note", "new", ALL),
    ("oui mais quand est le dentiste", "note", "new", ALL),
    ("was steht in der Notiz", "note", "new", ALL),
    ("ja, wann ist der Zahnarzt", "note", "new", ALL),
    ("est-ce que c'est ok", "note", "new", ALL),
    ("sí", "note", "new", EN),  # the persona does not speak Spanish: not an answer
    ("oui", "ana", "new", EN),
    ("ja", "note", "new", EN),
]

# The red team's phrasings (issue 43): none is an answer of the table, yet on main (before the
# closed grammar, the rules alone) 40 of these 50 approved each of the three example cards
# below, and 48 approved at least one. Each must now decide nothing with any of them waiting,
# in any language the persona may list.
RED_TEAM_CARDS = (NOTE, ANA, EMAIL)
RED_TEAM: list[str] = [
    # inverted verbs: a verb that names another action, or the right one, never approves
    "delete the message", "send it to me", "text me", "save the note", "delete the email",
    "email the dentist", "email me", "forward it to me", "share it with me", "book it",
    "do it for me", "send me the note", "delete it", "send it", "text Ana", "post it",
    "save it", "save the email", "book the dentist", "pay it", "order it", "buy it",
    "publish it", "submit it", "run it", "schedule it", "transfer it", "reply to Ana",
    "message me", "forward the note", "share the note", "launch it", "execute it",
    "accept it", "allow it", "go with it", "proceed with it", "confirm the email",
    "send the note to Ana",
    # other languages: each says "delete it" or "send it"
    "bórralo", "supprime-le", "lösch es", "mándalo", "envoie-le", "schick es",
    # sarcasm, and a verdict before a position
    "yeah right", "oh sure", "yes 1", "sure, whatever", "ok 1",
]

