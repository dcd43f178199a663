"""What an approval card says an action will do (a tool's `summarize`/`describe`: the email,
the calendar event, the contact, any other tool's call). Written in the language of whom the
card is for, when it is asked (their turn); stored with the request, so its expiry notice and
/pending quote it as they first read it. In the languages that lead with their verb, the
card's first word is what "Reply 1 to {verb}" does by SMS (channels/sms/render.py)."""

from __future__ import annotations

from persona.line_group import LineGroup


class CardLines(LineGroup):
    """{body} is the message's first words; {start} a day and time in the person's locale
    (persona.spoken.card_moment), {end} "-13:45" or nothing; the parts that start with a
    comma or a space ({copies}, {sender}, {place}, {guests}, {found}, {arguments}) are said
    only when there is something to say."""

    card_email_send: str = "Send email “{subject}” to {to}{copies}{sender}: {body}"
    card_email_reply: str = "Reply “{subject}” to {to}{copies}{sender}: {body}"
    card_email_copies: str = ", cc {cc}"
    card_email_from: str = " from {sender}"
    card_email_reply_to: str = "Reply to message {uid}: {body}"
    card_email_reply_all_to: str = "Reply to all to message {uid}: {body}"
    card_event_add: str = "Add “{title}” {start}{end}{place}{guests}"
    card_event_place: str = ", at {location}"
    card_event_guests: str = ", with {attendees}"
    card_event_move: str = "Move “{title}” to {start}"
    card_event_cancel: str = "Cancel “{title}”"
    card_contact_save: str = "Save {name} to your address book: {details}{found}"
    card_contact_found: str = " (found in {found_in})"
    card_contact_no_details: str = "no details"
    # A tool with no card of its own: its name ("send email") and {arguments}: " (to: ...)".
    card_tool_call: str = "{tool}{arguments}"
    card_mcp_call: str = "{server} (MCP server): {tool}{arguments}"
    # A card in words, for a channel that has no buttons or cannot use them now (the toy
    # channel, SMS's fallback, WhatsApp's: channels/plain_cards.py), answered as any typed
    # yes or no.
    card_in_words: str = "{summary}? Answer yes or no."
    card_in_words_changeable: str = "{summary}? Answer yes or no, or tell me what to change."
